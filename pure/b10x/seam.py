"""The b10x seam: the loop's ``--json`` record read into ``metaharness.event/1``
(docs/adapters/b10x.md#reading-the-record, #caller-seam).

One reader serves live runs, ``replay b10x`` and conformance. :func:`open_seam` starts a stream (with
any plan-time warnings), :func:`read_line` maps one record line, :func:`end_of_record` releases what
the end of the record releases, and :func:`wind_up` closes the stream. Each returns the new state and
the effects to perform, in order: event values for the stream's writer (``EventValue``), answer lines for the loop's
stdin (:class:`AnswerLine`) and deadlines to arm (``decisions.Arm``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias, cast

import msgspec
from msgspec import UNSET, Struct

from metaharness.pure import decisions as desk_
from metaharness.pure.b10x import records as rec
from metaharness.pure.b10x.vendor import HONOURED_COMMANDS
from metaharness.pure.budgets import VENDOR_BUDGET_MS
from metaharness.pure.call_memory import CallMemory
from metaharness.pure.census import count_decision
from metaharness.pure.commands import (
    Steering,
)
from metaharness.pure.decisions import Arm, Control, Desk, PresentedCall
from metaharness.pure.events import (
    Abstain,
    Allow,
    Census,
    ContextFile,
    Decision,
    Deny,
    Event,
    EventValue,
    FinalAnswer,
    Hermetic,
    Opaque,
    Process,
    SessionEnded,
    SessionStarted,
    Stream,
    Text,
    Thinking,
    ToolDecided,
    ToolResult,
    Transcript,
    TurnStarted,
    Usage,
    UsageReported,
    WarningRaised,
    Withheld,
    closing_marker,
    note,
    note_each,
    result_unobserved,
)
from metaharness.pure.frames import Frame, Operation
from metaharness.pure.jsonline import compact, sha256_hex
from metaharness.pure.modes import DecisionMode
from metaharness.pure.program_subjects import argv_subjects
from metaharness.pure.readings import stated_count
from metaharness.pure.run_stages import closing_reason, decision_deadline, no_terminal_record
from metaharness.pure.session_steps import SessionSteps
from metaharness.pure.stop import KILL, Stop, StopPolicy
from metaharness.pure.subjects import TreeFacts, resolve_subjects

ADAPTER = "b10x"
ADAPTER_CLASS = "direct_provider"
BUDGET_STOPS = frozenset(
    {"max-turns", "max-input-tokens", "max-output-tokens", "max-cost", "deadline", "budget-exhausted"}
)
"""The b10x budget words: a stop of one of these kinds closes the stream ``budget``
(docs/adapters/b10x.md#closing-event-and-stop-kinds)."""

DELEGATE_KINDS = frozenset({"delegate-started", "delegate-finished", "delegated"})
"""Records of a delegation: ``opaque``, and ``subagents_spawned`` is then unknown (docs/adapters/b10x.md#record-mapping,
#closing-event-and-stop-kinds)."""

SEAM_DECIDABLE = ("file_write", "file_edit", "run")
"""The tools the loop asks about with its ceiling at ``low`` (docs/adapters/b10x.md#caller-seam)."""

_OPERATIONS = {
    "file_read": "file.read",
    "file_write": "file.write",
    "file_edit": "file.edit",
    "dir_list": "dir.list",
    "search": "search",
    "run": "shell",
}
"""The rendering of docs/adapters/b10x.md#rendering read backwards: a loop tool's operation."""

ABSTAIN_REASON = (
    "metaharness abstained on this call and the loop's approval grammar has no word for abstaining, "
    "so the call is refused; nothing ran"
)
REPLACE_REASON = (
    "metaharness decided to run this call with a replaced input and the loop's approval grammar cannot "
    "carry one, so the call is refused; nothing ran"
)
UNEXPECTED_REASON = "metaharness held no announcement of this call, so it cannot decide it; nothing ran"
NAME_MISMATCH_REASON = (
    "the loop asks approval for this call under another tool name than it announced, so metaharness cannot "
    "tell which call it would approve"
)
UNVERIFIED_TIER_MESSAGE = (
    "this run's decisions travel on the b10x caller seam and the call tier is declared unverified: the loop "
    "asks only about calls above its approval ceiling (low), so reads run unasked"
)


class AnswerLine(Struct, frozen=True):
    """One answer line for the loop's stdin, ``\\n`` included (docs/adapters/b10x.md#caller-seam step 3)."""

    call_id: str
    line: bytes


Effect: TypeAlias = EventValue | AnswerLine | Arm


class SeamSettings(Struct, frozen=True, kw_only=True):
    """What a run fixes before its record is read (docs/adapters/b10x.md#opening-event): the decision mode, ``--model``,
    the probed (or replay's) harness version, the transcript, the context files, the attestation, the frame
    in force (its digest; ``frame`` is the loaded document the run decides by) and the deadline."""

    run: str
    mode: DecisionMode
    model: str | None = None
    harness_version: str | None = None
    transcript: Transcript
    context_files: tuple[ContextFile, ...] = ()
    hermetic: Hermetic
    frame: Frame | None = None
    vendor_budget_ms: int = VENDOR_BUDGET_MS

    @property
    def deadline_ms(self) -> int:
        """metaharness's own deadline for one asked call (docs/decisions.md#deadlines)."""
        return decision_deadline(self.vendor_budget_ms)


Chain: TypeAlias = tuple[()] | tuple[Any, "Chain"]
"""A persistent list, newest first: ``()`` or ``(item, rest)``; pushing an item shares the rest, so
buffering one more delta costs the same however long the attempt is."""


def chained(chain: Chain) -> list[Any]:
    """The items of ``chain``, oldest first."""
    items = []
    while chain:
        item, chain = chain
        items.append(item)
    items.reverse()
    return items


class Held(Struct, frozen=True):
    """A ``tool-requested`` held until the record shows whether the loop asks about it
    (docs/adapters/b10x.md#reading-the-record)."""

    call_id: str
    name: str
    arguments: Any


class SeamState(Struct, frozen=True, kw_only=True):
    """Where the reading of one record stands."""

    settings: SeamSettings
    stream: Stream
    held: Held | None = None
    attempt: Chain | None = None
    """The open attempt's buffered events, or ``None`` when no attempt is open."""
    turn_text: Chain = ()
    """The texts emitted in the current turn."""
    started: bool = False
    stop: str | None = None
    answered: bytes | None = None
    cost: int | None = None
    delegated: bool = False
    desk: Desk
    answers: CallMemory[bool] = CallMemory()
    """Each answered call's id and whether the line written was allow (the last ``CALL_MEMORY_LIMIT`` or more)."""
    tree: TreeFacts | None = None
    """The child's working directory and the links its calls' subjects pass through (live runs)."""


class _Out:
    """The effects one step produces, with the stream, the desk and the answers they advance (local to
    one call)."""

    __slots__ = ("answers", "desk", "effects", "stream")

    def __init__(self, state: SeamState) -> None:
        self.stream = state.stream
        self.desk = state.desk
        self.answers = state.answers
        self.effects: list[Effect] = []

    def emit(self, payload: Event) -> None:
        self.stream, value = note(self.stream, payload)
        self.effects.append(value)

    def emit_all(self, payloads: list[Event]) -> None:
        self.stream, values = note_each(self.stream, payloads)
        self.effects.extend(values)

    def answer(self, call_id: str, decision: Decision) -> None:
        """The caller-seam line for ``decision`` goes to the loop's stdin (docs/adapters/b10x.md#caller-seam step 3)."""
        self.effects.append(AnswerLine(call_id, answer_line(call_id, decision)))
        self.answers = self.answers.set(call_id, isinstance(decision, Allow))

    def step(self, step: tuple[Desk, tuple[desk_.Effect, ...]]) -> None:
        """Perform the desk's effects in order: events noted, answers rendered, deadlines armed."""
        self.desk, effects = step
        for effect in effects:  # by exact type: an isinstance on a struct class costs more
            if type(effect) is desk_.Emit:
                self.emit(effect.event)
            elif type(effect) is desk_.Answer:
                self.answer(effect.call_id, effect.decision)
            elif type(effect) is desk_.Arm:
                self.effects.append(effect)

    def finish(self, state: SeamState, **changes: Any) -> tuple[SeamState, tuple[Effect, ...]]:
        new = msgspec.structs.replace(state, stream=self.stream, desk=self.desk, answers=self.answers, **changes)
        return new, tuple(self.effects)


def warning(code: str, message: str) -> WarningRaised:
    return WarningRaised(code=code, message=message)


def version_off_pin(program: str, found: str | None, pins: tuple[str, ...]) -> WarningRaised | None:
    """The plan-time ``VERSION_OFF_PIN`` of docs/adapters/b10x.md#program-and-version (docs/events.md#warning-codes
    wording), or ``None`` on the pin."""
    joined = ", ".join(pins)
    if found is None:
        return warning(
            "VERSION_OFF_PIN",
            f"{program} reports no readable version; the adapter is pinned to {joined}, so this run is "
            "unverified rather than refused",
        )
    if found in pins:
        return None
    return warning(
        "VERSION_OFF_PIN",
        f"{program} reports {found}; the adapter is pinned to {joined}, so this run is unverified rather than refused",
    )


def open_seam(
    settings: SeamSettings, plan_warnings: tuple[WarningRaised, ...] = ()
) -> tuple[SeamState, tuple[Effect, ...]]:
    """A new stream: the plan-time warnings (``VERSION_OFF_PIN`` first), then under frame and ask the
    ``UNVERIFIED_TIER`` warning (docs/adapters/b10x.md#capabilities-and-doctor); replay passes none and gets no
    ``UNVERIFIED_TIER``."""
    desk = desk_.open_desk(settings.mode, settings.frame, settings.vendor_budget_ms)
    state = SeamState(settings=settings, stream=Stream(settings.run), desk=desk)
    out = _Out(state)
    for item in plan_warnings:
        out.emit(item)
    return out.finish(state)


def unverified_tier() -> WarningRaised:
    """The ``UNVERIFIED_TIER`` warning a live frame or ask run begins with
    (docs/adapters/b10x.md#capabilities-and-doctor)."""
    return warning("UNVERIFIED_TIER", UNVERIFIED_TIER_MESSAGE)


def line_subjects(line: bytes) -> tuple[str, ...]:
    """The subjects a ``tool-requested`` line's call names as spelled (none for any other line), so the
    shell can look up the links they pass through before the line is read."""
    record = rec.read_record(line)
    return call_operations(record.name, record.arguments)[1] if isinstance(record, rec.ToolRequested) else ()


def read_line(
    state: SeamState, number: int, line: bytes, tree: TreeFacts | None = None
) -> tuple[SeamState, tuple[Effect, ...]]:
    """Map record line ``number`` (1-based, blank lines counted), its terminator already stripped;
    ``tree`` holds the links the line's subjects pass through, laid over what the state knew."""
    if tree is not None:
        state = _replace(state, tree=tree if state.tree is None else state.tree.merged(tree))
    record = rec.read_record(line)
    if state.held is None:
        quick = _QUICK.get(type(record))
        if quick is not None:
            return quick(state, record)
    return mapped_line(state, number, line, record)


def mapped_line(
    state: SeamState, number: int, line: bytes, record: rec.Record | str | None
) -> tuple[SeamState, tuple[Effect, ...]]:
    """Line ``number``'s ``record`` mapped by the general path, which every record takes: a held call released
    first unless the line asks about it, then the record buffered, retried or mapped (:func:`read_line` takes the
    records of ``_QUICK`` a shorter way to the same state and effects)."""
    if record is None and not line.strip():
        return state, ()
    held = state.held
    out = _Out(state)
    changes: dict[str, Any] = {}
    if held is not None and not (isinstance(record, rec.ApprovalRequired) and record.call_id == held.call_id):
        _release(state, out, held, changes)
    if isinstance(record, _BUFFERED):
        _buffered(state, out, record, changes)
    elif isinstance(record, rec.TurnRetried):
        _retried(state, out, record, changes)
    else:
        _flush(state, out, changes)
        _map(state, out, record, number, line, changes)
    return out.finish(state, **changes)


_replace = msgspec.structs.replace
"""Bound once: the hot paths of :func:`read_line` replace the state on every line."""

Quick: TypeAlias = "Callable[[SeamState, Any], tuple[SeamState, tuple[Effect, ...]]]"


def _announce(state: SeamState, out: _Out, record: rec.ToolRequested, changes: dict[str, Any]) -> None:
    """A ``tool-requested``: under observe presented on seam ``none`` at once, else held until the record shows
    whether the loop asks about it (docs/adapters/b10x.md#reading-the-record)."""
    held = Held(record.call_id, record.name, record.arguments)
    if state.settings.mode == "observe":
        out.step(desk_.present(out.desk, presented_call(held, "none", state.tree)))
    else:
        changes["held"] = held


def _announced(state: SeamState, record: rec.ToolRequested) -> tuple[SeamState, tuple[Effect, ...]]:
    """A ``tool-requested`` when no call is held: the open attempt's buffer emitted, then :func:`_announce`."""
    out = _Out(state)
    changes: dict[str, Any] = {}
    _flush(state, out, changes)
    _announce(state, out, record, changes)
    return out.finish(state, **changes)


def _quiet(state: SeamState, record: rec.ToolArgumentsDelta) -> tuple[SeamState, tuple[Effect, ...]]:
    """A tool's streamed arguments say nothing the ``tool-requested`` will not."""
    return state, ()


def _delta(state: SeamState, record: rec.TextDelta | rec.ReasoningDelta) -> tuple[SeamState, tuple[Effect, ...]]:
    """A text or reasoning delta: buffered while an attempt is open, else emitted (a text counted in the turn)."""
    payload: Text | Thinking = (
        Text(text=record.text, request_id=None)
        if type(record) is rec.TextDelta
        else Thinking(text=record.text, request_id=None)
    )
    attempt = state.attempt
    if attempt is not None:
        return _replace(state, attempt=(payload, attempt)), ()
    stream, value = note(state.stream, payload)
    turn_text = (payload.text, state.turn_text) if type(payload) is Text else state.turn_text
    return _replace(state, stream=stream, turn_text=turn_text), (value,)


def _flushed_with(state: SeamState, payload: Event) -> tuple[Stream, Chain, tuple[Effect, ...]]:
    """The open attempt's buffer emitted in order, then ``payload``: the stream, the turn's texts and the effects
    (what :func:`_flush` and :func:`_map` do for a record that closes the attempt)."""
    attempt = state.attempt
    if not attempt:
        stream, value = note(state.stream, payload)
        return stream, state.turn_text, (value,)
    payloads = chained(attempt)
    turn_text = state.turn_text
    for item in payloads:
        if type(item) is Text:
            turn_text = (item.text, turn_text)
    payloads.append(payload)
    stream, values = note_each(state.stream, payloads)
    return stream, turn_text, tuple(values)


def _usage(state: SeamState, record: rec.Usage) -> tuple[SeamState, tuple[Effect, ...]]:
    stream, turn_text, effects = _flushed_with(state, usage_event(record, state.settings.model))
    return _replace(state, stream=stream, attempt=None, turn_text=turn_text), effects


def _completed(state: SeamState, record: rec.ToolCompleted) -> tuple[SeamState, tuple[Effect, ...]]:
    stream, turn_text, effects = _flushed_with(state, tool_result(record))
    return _replace(state, stream=stream, attempt=None, turn_text=turn_text), effects


def _turn(state: SeamState, record: rec.TurnStarted) -> tuple[SeamState, tuple[Effect, ...]]:
    """A new turn: the last attempt's buffer emitted, a staged frame in force, an empty attempt opened."""
    desk = desk_.begin_turn(state.desk)
    stream, _, effects = _flushed_with(state, TurnStarted(turn=record.turn, frame_digest=desk.frame_digest))
    return _replace(state, stream=stream, desk=desk, attempt=(), turn_text=()), effects


_QUICK: dict[type, Quick] = {
    rec.ToolArgumentsDelta: _quiet,
    rec.TextDelta: _delta,
    rec.ReasoningDelta: _delta,
    rec.Usage: _usage,
    rec.ToolCompleted: _completed,
    rec.TurnStarted: _turn,
    rec.ToolRequested: _announced,
}
"""The records most lines are, mapped in one step when no call is held: dispatched on the decoded type once, each
emitting what the general path (:func:`_flush`, then :func:`_buffered` or :func:`_map`) would."""

_BUFFERED = (rec.TextDelta, rec.ReasoningDelta, rec.Warning, rec.ToolArgumentsDelta)
"""The records an open attempt buffers (docs/adapters/b10x.md#reading-the-record)."""


def _opaque(line: bytes, number: int, subtype: str | None) -> Opaque:
    return Opaque(vendor_type=ADAPTER, vendor_subtype=subtype, digest=sha256_hex(line), source_line=number)


def _buffered(state: SeamState, out: _Out, record: rec.Record, changes: dict[str, Any]) -> None:
    """Deltas and loop warnings: buffered while an attempt is open, else emitted
    (docs/adapters/b10x.md#reading-the-record)."""
    if isinstance(record, rec.ToolArgumentsDelta):
        return
    payload: Event
    if isinstance(record, rec.TextDelta):
        payload = Text(text=record.text, request_id=None)
    elif isinstance(record, rec.ReasoningDelta):
        payload = Thinking(text=record.text, request_id=None)
    else:
        payload = warning(cast(rec.Warning, record).code, cast(rec.Warning, record).message)
    attempt = changes.get("attempt", state.attempt)
    if attempt is not None:
        changes["attempt"] = (payload, attempt)
        return
    out.emit(payload)
    if isinstance(payload, Text):
        changes["turn_text"] = (payload.text, changes.get("turn_text", state.turn_text))


def _flush(state: SeamState, out: _Out, changes: dict[str, Any]) -> None:
    """Emit an open attempt's buffer in order and close the attempt."""
    attempt = changes.get("attempt", state.attempt)
    if not attempt:
        if attempt is not None:
            changes["attempt"] = None
        return
    payloads = chained(attempt)
    out.emit_all(payloads)
    turn_text = changes.get("turn_text", state.turn_text)
    for payload in payloads:
        if type(payload) is Text:
            turn_text = (payload.text, turn_text)
    changes["turn_text"] = turn_text
    changes["attempt"] = None


def _retried(state: SeamState, out: _Out, record: rec.TurnRetried, changes: dict[str, Any]) -> None:
    """Drop the interrupted attempt's deltas, emit the rest, say so, open a new attempt
    (docs/adapters/b10x.md#reading-the-record)."""
    attempt = chained(changes.get("attempt", state.attempt) or ())
    kept = [payload for payload in attempt if not isinstance(payload, Text | Thinking)]
    dropped = len(attempt) - len(kept)
    out.emit_all(kept)
    out.emit(
        warning(
            "attempt-discarded",
            f"turn {record.turn} was interrupted and is being retried (retry {record.attempt}): {record.reason}; "
            f"{dropped} streamed delta(s) from the interrupted attempt were discarded",
        )
    )
    changes["attempt"] = ()


def _map(
    state: SeamState, out: _Out, record: rec.Record | str | None, number: int, line: bytes, changes: dict[str, Any]
) -> None:
    """Every record that is not buffered (docs/adapters/b10x.md#record-mapping)."""
    settings = state.settings
    if record is None or isinstance(record, str):
        out.emit(_opaque(line, number, record))
        if record in DELEGATE_KINDS:
            changes["delegated"] = True
    elif isinstance(record, rec.Started):
        if state.started:
            out.emit(_opaque(line, number, "started"))
            return
        changes["started"] = True
        out.emit(session_started(settings, record))
        if settings.mode != "observe":
            gap = [tool for tool in record.published_tools or () if tool not in SEAM_DECIDABLE]
            if gap:
                out.emit(
                    warning(
                        "COVERAGE_GAP",
                        f"the caller seam cannot decide {', '.join(gap)}: the loop runs them unasked below its "
                        "approval ceiling",
                    )
                )
    elif isinstance(record, rec.TurnStarted):
        out.desk = desk_.begin_turn(out.desk)
        out.emit(TurnStarted(turn=record.turn, frame_digest=out.desk.frame_digest))
        changes["attempt"] = ()
        changes["turn_text"] = ()
    elif isinstance(record, rec.Usage):
        out.emit(usage_event(record, settings.model))
    elif isinstance(record, rec.Cost):
        changes["cost"] = (state.cost or 0) + record.micro_usd
    elif isinstance(record, rec.ToolRequested):
        _announce(state, out, record, changes)
    elif isinstance(record, rec.ApprovalRequired):
        _question(state, out, record, changes)
    elif isinstance(record, rec.ApprovalResolved):
        _resolved(state, out, record)
    elif isinstance(record, rec.ToolCompleted):
        out.emit(tool_result(record))
    elif isinstance(record, rec.Answered):
        changes["answered"] = compact(record.value)
    elif isinstance(record, rec.HookRan):
        _hook(out, record, line, number)
    elif isinstance(record, rec.Finished):
        if state.stop is not None:
            out.emit(_opaque(line, number, "finished"))
            return
        stop = stop_kind(record.stop)
        changes["stop"] = stop
        ended = session_ended(state, changes, record, stop, out.desk.census)
        out.emit(ended)
    else:
        _noted(out, record)


def _noted(out: _Out, record: rec.Record) -> None:
    """Records read into a warning, or into nothing (docs/adapters/b10x.md#record-mapping)."""
    if isinstance(record, rec.CredentialRenewed):
        expiry = f"expires_unix {record.expires_unix}" if record.expires_unix is not None else "expiry unknown"
        rotated = "true" if record.refresh_token_rotated else "false"
        out.emit(
            warning(
                "credential-renewed",
                f"the loop renewed the {record.provider} credential at {record.source} ({expiry}; refresh token "
                f"rotated: {rotated})",
            )
        )
    elif isinstance(record, rec.Compacted):

        def number(value: int | None) -> str:
            return "unknown" if value is None else str(value)

        out.emit(
            warning(
                "compacted",
                f"the loop compacted the conversation: {number(record.elided_results)} result(s) elided "
                f"({number(record.elided_bytes)} bytes), {number(record.summarised_items)} item(s) summarised, "
                f"{number(record.bytes_before)} → {number(record.bytes_after)} bytes",
            )
        )
    elif isinstance(record, rec.RefusedLine):
        out.emit(warning("loop-refused", record.reason))
    elif isinstance(record, rec.Session):
        out.emit(
            warning(
                "session-written",
                f"the loop wrote session {record.id} to {record.path} although it was launched with --no-session",
            )
        )


def _hook(out: _Out, record: rec.HookRan, line: bytes, number: int) -> None:
    """``hook-ran``: ``block`` and ``failed`` are warnings, ``proceed`` nothing
    (docs/adapters/b10x.md#record-mapping)."""
    if record.decision == "block":
        out.emit(warning("hook-refused", record.reason or "a hook refused the call and gave no reason"))
    elif record.decision == "failed":
        out.emit(warning("hook-failed", record.reason or record.program or "a hook could not be consulted"))
    elif record.decision != "proceed":
        out.emit(_opaque(line, number, "hook-ran"))


def session_started(settings: SeamSettings, record: rec.Started) -> SessionStarted:
    """``session.started`` from the loop's ``started`` (docs/adapters/b10x.md#opening-event)."""
    withheld = (
        None
        if record.withheld is None
        else tuple(Withheld(tool=entry.tool, reason=entry.reason) for entry in record.withheld)
    )
    return SessionStarted(
        adapter=ADAPTER,
        adapter_class=ADAPTER_CLASS,
        harness_version=settings.harness_version,
        session_id=None,
        model=record.model if record.model is not None else settings.model,
        permission_mode=None,
        credential_source=record.credential_source,
        output_style=None,
        cwd=record.workspace,
        offered_tools=record.published_tools,
        available_operations=record.operations if record.operations is not None else UNSET,
        withheld=withheld,
        slash_commands=None,
        skills=record.skills if record.skills is not None else (),
        agents=record.agents if record.agents is not None else (),
        plugins=None,
        mcp_servers=(),
        inputs_digest=None,
        transcript=settings.transcript,
        context_files=settings.context_files if settings.context_files else UNSET,
        hermetic=settings.hermetic,
    )


def usage_event(record: rec.Usage, model: str | None) -> UsageReported:
    """``usage`` from the loop's ``usage``: cached input read as cache reads (docs/adapters/b10x.md#record-mapping)."""
    return UsageReported(
        request_id=None,
        model=record.model if record.model is not None else model,
        usage=Usage(
            input_tokens=record.input_tokens,
            output_tokens=record.output_tokens,
            cache_read_input_tokens=record.cached_input_tokens,
            cache_creation_input_tokens=record.cache_creation_input_tokens,
            service_tier=None,
            thinking_tokens=None,
            iterations=None,
            speed=None,
            cost_usd=None,
        ),
    )


def tool_result(record: rec.ToolCompleted) -> ToolResult:
    """``tool.result`` from ``tool-completed``: only whether it failed is known
    (docs/adapters/b10x.md#record-mapping)."""
    return ToolResult(
        exit_code=None,
        outcome_source=None,
        call_id=record.call_id,
        is_error=record.failed,
        content=None,
        bytes=None,
        tool_use_result=None,
    )


def stop_kind(stop: Any) -> str:
    """The stop kind of a ``finished`` record, ``unknown`` when missing
    (docs/adapters/b10x.md#closing-event-and-stop-kinds)."""
    if isinstance(stop, dict) and isinstance(stop.get("kind"), str):
        return cast(str, stop["kind"])
    return stop if isinstance(stop, str) else "unknown"


def cost_total(micro_usd: int) -> msgspec.Raw:
    """The micro-dollar sum as a plain decimal: integer part, ``.``, the six-digit remainder with
    trailing zeros removed, at least one digit (docs/adapters/b10x.md#closing-event-and-stop-kinds: 1234 →
    0.001234, 2500000 → 2.5)."""
    whole, remainder = divmod(micro_usd, 1_000_000)
    fraction = f"{remainder:06d}".rstrip("0") or "0"
    return msgspec.Raw(f"{whole}.{fraction}".encode())


def session_ended(
    state: SeamState, changes: dict[str, Any], record: rec.Finished, stop: str, census: Census
) -> SessionEnded:
    """``session.ended`` from ``finished`` (docs/adapters/b10x.md#closing-event-and-stop-kinds)."""
    stated = record.stop.get("turns") if isinstance(record.stop, dict) else None
    turns = stated_count(record.turns) if record.turns is not None else stated_count(stated)
    answered = changes.get("answered", state.answered)
    text = answered.decode() if answered is not None else "".join(chained(changes.get("turn_text", state.turn_text)))
    final = FinalAnswer(text=text, turn_id=None) if stop == "completed" and text else None
    cost = changes.get("cost", state.cost)
    return SessionEnded(
        final_answer=final,
        observed_models=None,
        is_error=stop != "completed",
        subtype=stop,
        stop_reason=None,
        terminal_reason=stop,
        api_error_status=None,
        num_turns=turns,
        duration_ms=None,
        duration_api_ms=None,
        ttft_ms=None,
        time_to_request_ms=None,
        total_cost_usd=None if cost is None else cast(float, cost_total(cost)),
        permission_denials=(),
        subagents_spawned=None if state.delegated else 0,
        usage=None,
        model_usage=None,
        census=census,
    )


def call_operations(name: str, arguments: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A call's operations and subjects from the flat entry's own arguments
    (docs/adapters/b10x.md#operations-and-subjects)."""
    args = arguments if isinstance(arguments, dict) else {}
    if name == "tool_invoke":
        inner = args.get("name")
        return call_operations(inner, args.get("arguments")) if isinstance(inner, str) else ((), ())
    operation = _OPERATIONS.get(name)
    operations = (operation,) if operation is not None else ()
    if name in ("file_read", "file_write", "file_edit"):
        path = args.get("path")
        return operations, (f"file:{path}",) if isinstance(path, str) else ()
    if name in ("dir_list", "search", "find"):
        path = args.get("path", ".")
        return operations, (f"file:{path}",) if isinstance(path, str) else ()
    if name == "run":
        argv = args.get("argv")
        words = argv if isinstance(argv, list) and argv and all(isinstance(word, str) for word in argv) else None
        return operations, argv_subjects(words) if words is not None else ()
    return (), ()


def presented_call(held: Held, seam: str, tree: TreeFacts | None = None) -> PresentedCall:
    """A loop call as the desk is shown it: operations and subjects from its own arguments
    (docs/adapters/b10x.md#operations-and-subjects), ``file:`` subjects resolved against the child's ``tree`` when
    the run has one."""
    operations, subjects = call_operations(held.name, held.arguments)
    if tree is not None:
        subjects = resolve_subjects(subjects, tree.cwd, tree.links)
    return PresentedCall(
        call_id=held.call_id,
        name=held.name,
        input=held.arguments,
        seam=seam,
        operations=tuple(Operation(op) for op in operations),
        subjects=subjects,
    )


def _release(state: SeamState, out: _Out, held: Held, changes: dict[str, Any]) -> None:
    """A held call the loop did not ask about: recorded on seam ``none``, never decided
    (docs/adapters/b10x.md#reading-the-record)."""
    _flush(state, out, changes)
    out.step(desk_.present(out.desk, presented_call(held, "none", state.tree)))
    changes["held"] = None


def end_of_record(state: SeamState) -> tuple[SeamState, tuple[Effect, ...]]:
    """The record ended: a held call is released unasked and an open attempt's buffer is emitted
    (docs/adapters/b10x.md#reading-the-record). No terminal record is invented."""
    out = _Out(state)
    changes: dict[str, Any] = {}
    if state.held is not None:
        _release(state, out, state.held, changes)
    _flush(state, out, changes)
    return out.finish(state, **changes)


def answer_line(call_id: str, decision: Decision) -> bytes:
    """The caller-seam answer line, byte-exact (docs/adapters/b10x.md#caller-seam step 3): allow, or deny with the
    reason; abstain and replace are written as a deny that says why."""
    if isinstance(decision, Allow):
        return compact({"call_id": call_id, "decision": "allow"}) + b"\n"
    if isinstance(decision, Deny):
        reason = decision.reason
    elif isinstance(decision, Abstain):
        reason = ABSTAIN_REASON
    else:
        reason = REPLACE_REASON
    return compact({"call_id": call_id, "decision": "deny", "reason": reason}) + b"\n"


def _question(state: SeamState, out: _Out, record: rec.ApprovalRequired, changes: dict[str, Any]) -> None:
    """An ``approval-required``: under observe nothing; under frame and ask the held call becomes a
    question (docs/adapters/b10x.md#caller-seam step 2), or an unexpected one is denied
    (docs/adapters/b10x.md#caller-seam, unexpected question)."""
    settings = state.settings
    if settings.mode == "observe":
        return
    held = state.held
    if held is None or held.call_id != record.call_id:
        decision = Deny(reason=UNEXPECTED_REASON)
        decided = ToolDecided(
            call_id=record.call_id, decision=decision, decided_by="adapter", seam="control_request", latency_ms=None
        )
        out.answer(record.call_id, decision)
        out.emit(decided)
        out.desk = msgspec.structs.replace(out.desk, census=count_decision(out.desk.census, decided))
        out.emit(
            warning(
                "approval-unexpected",
                f"the loop asked about {record.call_id}, which metaharness was not holding as a question",
            )
        )
        return
    changes["held"] = None
    call = presented_call(held, "control_request", state.tree)
    if record.name and record.name != held.name:
        out.emit(
            warning(
                "approval-name-mismatch",
                f"the loop announced {held.call_id} as {held.name} and asks approval for it as {record.name}",
            )
        )
        call = msgspec.structs.replace(call, unreadable=NAME_MISMATCH_REASON)
    out.step(desk_.present(out.desk, call))


def expire(state: SeamState, call_id: str, elapsed_ms: int) -> tuple[SeamState, tuple[Effect, ...]]:
    """An asked call's deadline fired: the desk denies it by ``deadline`` (docs/adapters/b10x.md#caller-seam step 4)."""
    out = _Out(state)
    out.step(desk_.expire(out.desk, call_id, elapsed_ms))
    return out.finish(state)


def abandon_pending(state: SeamState, why: desk_.AbandonCause) -> tuple[SeamState, tuple[Effect, ...]]:
    """Every pending call denied by ``adapter``, its line written first, then ``PENDING_CALL_ABANDONED``
    (docs/decisions.md#correlation-and-abandonment)."""
    out = _Out(state)
    out.step(desk_.abandon(out.desk, why))
    return out.finish(state)


def _resolved(state: SeamState, out: _Out, record: rec.ApprovalResolved) -> None:
    """``approval-resolved``: observe reads a denial as the approver's; frame and ask check it
    against the answer written (docs/adapters/b10x.md#record-mapping, #caller-seam step 5)."""
    verdict = "true" if record.approved else "false"
    if state.settings.mode == "observe":
        if not record.approved:
            out.emit(warning("approval-denied", f"the approver denied {record.call_id}"))
        return
    written = state.answers.get(record.call_id)
    if written is None:
        out.emit(
            warning(
                "approval-disagreed",
                f"the loop resolved {record.call_id} as approved={verdict} and metaharness wrote no answer for it",
            )
        )
    elif written != record.approved:
        answered = "allow" if written else "deny"
        out.emit(
            warning(
                "approval-disagreed",
                f"the loop resolved {record.call_id} as approved={verdict} and metaharness answered {answered}",
            )
        )


def wind_up(
    state: SeamState,
    *,
    stderr_tail: bytes = b"",
    halted: bool = False,
    killed: bool = False,
    process: Process,
    warnings: tuple[WarningRaised, ...] = (),
) -> tuple[SeamState, tuple[Effect, ...]]:
    """Close the stream (docs/events.md#stream-ending, docs/adapters/b10x.md#record-mapping): pending calls abandoned by
    the end of the stream, ``RESULT_UNOBSERVED`` naming the calls that never got a result, ``NO_TERMINAL_RECORD`` when
    no ``finished`` was read (not after a ``halt``), the wind-up's own ``warnings`` (``RETAIN_FAILED``),
    then ``stream.closed``."""
    state, abandoned = abandon_pending(state, "the stream ended")
    out = _Out(state)
    unobserved = result_unobserved(out.stream)
    if unobserved is not None:
        out.emit(unobserved)
    if state.stop is None and not halted:
        out.emit(no_terminal_record(stderr_tail))
    for item in warnings:
        out.emit(item)
    reason = closing_reason(halted=halted, killed=killed, stop=state.stop, budget_stops=BUDGET_STOPS)
    out.emit(closing_marker(out.stream, reason, process))
    new, effects = out.finish(state)
    return new, abandoned + effects


STOP_POLICY = StopPolicy(interrupt=Stop("SIGINT", "child"), halt=KILL)
"""``interrupt`` is SIGINT to the loop alone (it ends its turn and the run); ``halt`` kills the group at
once; a signal is SIGTERM to the group, SIGKILL 5 s later or at the next signal."""


def take_command(
    state: SeamState, command: Steering, latency_ms: int | None
) -> tuple[SeamState, tuple[Effect, ...], Control]:
    """Steps 2–4 of docs/events.md#commands for one framed command, and the control the shell applies after the
    effects: ``tool.decide`` decides a pending call (its ``tool.decided`` before its
    ``command.result``); ``interrupt`` and ``halt`` abandon pending calls first (their deny lines
    written before the signal, docs/adapters/b10x.md#caller-seam). ``latency_ms`` is the elapsed time since the decided
    call's deadline was armed."""
    out = _Out(state)
    desk, effects, control = desk_.steer(out.desk, command, latency_ms, ADAPTER, HONOURED_COMMANDS)
    out.step((desk, effects))
    new, performed = out.finish(state)
    return new, performed, control


def record_ended(state: SeamState) -> tuple[SeamState, tuple[Effect, ...]]:
    """A live run's record ended: what :func:`end_of_record` releases, then every pending call abandoned by the end
    of the stream (docs/decisions.md#correlation-and-abandonment)."""
    state, released = end_of_record(state)
    state, abandoned = abandon_pending(state, "the stream ended")
    return state, (*released, *abandoned)


STEPS = SessionSteps(abandon_pending=abandon_pending, expire=expire, take_command=take_command, end_of_record=record_ended)
"""The b10x seam's steps every live loop takes (``metaharness.pure.session_steps``)."""
