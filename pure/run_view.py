"""What a person sees of a run: the state of ``metaharness-view`` and of the run page as a fold over
``metaharness.event/1`` lines, and the words both show (docs/view.md).

:func:`fold_view` takes one read line (or a :class:`Malformed` one) and the reader's clock reading at
its arrival, and returns the next :class:`ViewState`; nothing here reads a clock or writes anything.
The words come as :data:`Parts`, pieces of text each with a style word (``allow``, ``deny``, ``gap``…)
that the terminal colours, the page turns into a CSS class, and plain text drops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import msgspec
from immutables import Map
from msgspec import UNSET, UnsetType

from metaharness.pure.audit_report import census_lines, child_exit_text, withheld_line
from metaharness.pure.census import ZERO_CENSUS, count_decision
from metaharness.pure.events import (
    Abstain,
    Allow,
    AuthExpired,
    Census,
    CommandOk,
    CommandResult,
    Deny,
    Event,
    EventLine,
    Hermetic,
    Injection,
    Opaque,
    RowCheck,
    SessionEnded,
    SessionStarted,
    StepEntered,
    StreamClosed,
    Text,
    Thinking,
    ToolDecided,
    ToolRequested,
    ToolResult,
    TurnStarted,
    WarningRaised,
    event_name,
)
from metaharness.pure.hermetic import ROWS
from metaharness.pure.jsonline import compact
from metaharness.pure.run_stages import unaudited_exit
from metaharness.pure.stream_ending import stream_completeness
from metaharness.pure.terminal_text import shown

Parts: TypeAlias = tuple[tuple[str, str], ...]
"""Text pieces, each with its style word ("" for none)."""

SHORT_DIGEST = 12
INPUT_CHARACTERS = 80
MALFORMED_CHARACTERS = 120


class Malformed(msgspec.Struct, frozen=True):
    """A line that is not a ``metaharness.event/1`` event: its 1-based number, its text and why."""

    number: int
    text: str
    detail: str


class CallView(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call as it moves: requested (``requested_at`` is the reader's clock reading, in seconds,
    when the request arrived), then decided, then its result."""

    requested: ToolRequested
    requested_at: float
    decided: ToolDecided | None = None
    result: ToolResult | None = None


class Note(msgspec.Struct, frozen=True, tag="note"):
    """Something between the calls: ``kind`` is ``text``, ``thinking``, ``warning``, ``command``,
    ``malformed`` or ``record``; ``label`` the warning's code or a short name."""

    kind: str
    label: str
    text: str


class CallMark(msgspec.Struct, frozen=True, tag="call"):
    """A call's place in the run's order: ``index`` into :attr:`ViewState.calls` (0-based, in the order
    the calls were presented)."""

    index: int


Entry: TypeAlias = Note | CallMark


class ViewState(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the view has read so far; ``last_event`` is the name of the last line read (``""``
    for a malformed one), which closes a run of text or thinking. ``calls`` and ``timeline`` are keyed
    by position (persistent maps, so a fold step copies nothing); ``latest`` maps a call id to the
    position of its latest presentation."""

    run: str | None = None
    started: SessionStarted | None = None
    frame_digest: str | None = None
    calls: Map[int, CallView] = Map()
    latest: Map[str, int] = Map()
    timeline: Map[int, Entry] = Map()
    census: Census = ZERO_CENSUS
    ended: SessionEnded | None = None
    late_bypassed: int = 0
    """``DECISION_BYPASSED`` warnings since the last ``session.ended`` (or since the start without one)."""
    closings: tuple[tuple[int, StreamClosed], ...] = ()
    events: int = 0
    malformed: int = 0
    last_event: str = ""
    opaque: Map[str, tuple[int, int | None, int]] = Map()
    """Each kind of opaque record (``type/subtype``): its one note's position, the first one's line, the count."""


def all_calls(state: ViewState) -> list[CallView]:
    """Every call, in the order presented."""
    return [state.calls[index] for index in range(len(state.calls))]


def entries(state: ViewState) -> list[Entry]:
    """The timeline in order."""
    return [state.timeline[index] for index in range(len(state.timeline))]


def last_entry(state: ViewState) -> Entry | None:
    """The timeline's last entry."""
    return state.timeline[len(state.timeline) - 1] if state.timeline else None


def _input_text(value: Any) -> str:
    return compact(value).decode("utf-8")


def shortened(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_of(state: ViewState, call_id: str) -> CallView | None:
    """The latest call presented under ``call_id``."""
    index = state.latest.get(call_id)
    return None if index is None else state.calls[index]


def _replace_call(state: ViewState, call_id: str, **changes: Any) -> Map[int, CallView]:
    index = state.latest.get(call_id)
    if index is None:
        return state.calls
    return state.calls.set(index, msgspec.structs.replace(state.calls[index], **changes))


def _noted(state: ViewState, note: Note) -> Map[int, Entry]:
    """The timeline with ``note`` added; text or thinking continuing a run of the same kind is joined."""
    last = last_entry(state)
    if (
        note.kind in ("text", "thinking")
        and isinstance(last, Note)
        and last.kind == note.kind
        and state.last_event == note.kind
    ):
        return state.timeline.set(len(state.timeline) - 1, Note(note.kind, note.label, last.text + note.text))
    return state.timeline.set(len(state.timeline), note)


def _note_of(payload: Event) -> Note | None:
    if isinstance(payload, Text | Thinking):
        return Note(event_name(payload), event_name(payload), payload.text)
    if isinstance(payload, WarningRaised):
        return Note("warning", payload.code, payload.message)
    if isinstance(payload, CommandResult):
        outcome = payload.outcome
        words = "ok" if isinstance(outcome, CommandOk) else f"refused {outcome.refused.code}: {outcome.refused.reason}"
        return Note("command", payload.id, words)
    if isinstance(payload, Injection):
        return Note("record", "injection", payload.text)
    if isinstance(payload, Opaque):
        return Note("record", "opaque", f"{payload.vendor_type}/{payload.vendor_subtype} at line {payload.source_line}")
    if isinstance(payload, AuthExpired):
        return Note("record", "auth.expired", f"{payload.credential_source}: {payload.detail}")
    return None


def launch_frame(hermetic: Hermetic) -> str | None:
    """The digest of the frame the run was launched under, as row H10 names its governing documents
    (``frame <digest>``, then the others, joined by ``, ``)."""
    for entry in hermetic.imposed:
        if entry.row == "H10":
            named = [piece.removeprefix("frame ") for piece in entry.how.split(", ") if piece.startswith("frame ")]
            return named[0] if named else None
    return None


def fold_view(state: ViewState, item: EventLine | Malformed, now: float) -> ViewState:
    """The state after one more line; ``now`` is the reader's clock reading (seconds) at its arrival."""
    if isinstance(item, Malformed):
        shown = Note("malformed", f"line {item.number}", f"{item.detail}: {shortened(item.text, MALFORMED_CHARACTERS)}")
        return msgspec.structs.replace(
            state, timeline=state.timeline.set(len(state.timeline), shown), malformed=state.malformed + 1,
            last_event="",
        )
    payload = item.payload
    name = event_name(payload)
    changes: dict[str, Any] = {"events": state.events + 1, "last_event": name, "run": state.run or item.run}
    if isinstance(payload, SessionStarted) and state.started is None:
        changes["started"] = payload
        changes["frame_digest"] = state.frame_digest or launch_frame(payload.hermetic)
    elif isinstance(payload, TurnStarted | StepEntered) and payload.frame_digest is not None:
        changes["frame_digest"] = payload.frame_digest
    elif isinstance(payload, ToolRequested):
        index = len(state.calls)
        changes["calls"] = state.calls.set(index, CallView(requested=payload, requested_at=now))
        changes["latest"] = state.latest.set(payload.call_id, index)
        changes["timeline"] = state.timeline.set(len(state.timeline), CallMark(index))
    elif isinstance(payload, ToolDecided):
        changes["census"] = count_decision(state.census, payload)
        changes["calls"] = _replace_call(state, payload.call_id, decided=payload)
    elif isinstance(payload, ToolResult):
        changes["calls"] = _replace_call(state, payload.call_id, result=payload)
    elif isinstance(payload, SessionEnded):
        changes["ended"] = payload
        changes["late_bypassed"] = 0
    elif isinstance(payload, WarningRaised) and payload.code == "DECISION_BYPASSED":
        changes["late_bypassed"] = state.late_bypassed + 1
    elif isinstance(payload, StreamClosed):
        changes["closings"] = (*state.closings, (state.events, payload))
    if isinstance(payload, Opaque):
        changes.update(_opaque_folded(state, payload))
        return msgspec.structs.replace(state, **changes)
    note = _note_of(payload)
    if note is not None:
        changes["timeline"] = _noted(state, note)
    return msgspec.structs.replace(state, **changes)


def opaque_kind(payload: Opaque) -> str:
    """``type/subtype`` of a record the adapter could not read."""
    return f"{payload.vendor_type}/{payload.vendor_subtype}"


def _opaque_note(kind: str, first_line: int | None, count: int) -> Note:
    """One line for every record of ``kind``: where the first was, and how many came."""
    times = "" if count == 1 else f" ×{count}, the first"
    return Note("record", "opaque", f"{kind}{times} at line {first_line}")


def _opaque_folded(state: ViewState, payload: Opaque) -> dict[str, Any]:
    """A vendor's bookkeeping folded: the first record of a kind is one note, each later one counts on it."""
    kind = opaque_kind(payload)
    position, first_line, count = state.opaque.get(kind, (len(state.timeline), payload.source_line, 0))
    return {
        "timeline": state.timeline.set(position, _opaque_note(kind, first_line, count + 1)),
        "opaque": state.opaque.set(kind, (position, first_line, count + 1)),
    }


def final_census(state: ViewState) -> Census:
    """The census a reader reports: ``session.ended``'s own, else the recount of every decision; a
    ``DECISION_BYPASSED`` written after it is counted in ``bypassed`` too (docs/events.md#census)."""
    census = state.ended.census if state.ended is not None else state.census
    if not state.late_bypassed:
        return census
    counted = 0 if isinstance(census.bypassed, msgspec.UnsetType) else census.bypassed
    return msgspec.structs.replace(census, bypassed=counted + state.late_bypassed)


def completeness(state: ViewState) -> str:
    """``complete``, ``inconsistent`` or ``truncated``: one marker, last, counting the lines before it."""
    return stream_completeness(state.events, tuple((position, closed.events) for position, closed in state.closings))


def completeness_line(state: ViewState) -> str:
    """The reader's report line for the stream's closing marker."""
    verdict = completeness(state)
    if verdict == "truncated":
        return "stream: TRUNCATED — no `stream.closed` marker, so nothing in it can tell an absence from a cut-off file"
    position, closed = state.closings[0]
    if verdict == "inconsistent":
        detail = (
            f"{len(state.closings)} markers were written" if len(state.closings) > 1
            else f"it is line {position + 1} of {state.events}" if position != state.events - 1
            else f"counts {closed.events} event(s) where {position} precede it"
        )
        return f"stream: INCONSISTENT — a closing marker says {closed.reason} and {detail}"
    return f"stream: complete — {closed.events} event(s) before the marker, reason {closed.reason}"


def view_exit(state: ViewState) -> int:
    """``metaharness-view``'s own exit: 0 when the stream ended with ``stream.closed``, else 1."""
    return 0 if state.last_event == "stream.closed" else 1


def decision_word(decided: ToolDecided) -> str:
    """``allow``, ``deny``, ``replace`` or ``abstain``."""
    decision = decided.decision
    if isinstance(decision, Allow):
        return "allow"
    if isinstance(decision, Deny):
        return "deny"
    return "abstain" if isinstance(decision, Abstain) else "replace"


def decision_why(decided: ToolDecided) -> str:
    """The reason of a deny, the input of a replace, else empty."""
    decision = decided.decision
    if isinstance(decision, Deny):
        return decision.reason
    return "" if isinstance(decision, Allow | Abstain) else _input_text(decision.input)


def vendor_refused(state: ViewState) -> frozenset[str]:
    """The calls the vendor's own permission layer refused, as its terminal record lists them
    (``session.ended.permission_denials``)."""
    denials = state.ended.permission_denials if state.ended is not None else None
    return frozenset(denial.tool_use_id for denial in denials or () if denial.tool_use_id is not None)


def refused_by(state: ViewState, call: CallView) -> str | None:
    """Who refused ``call``: metaharness's decider when it denied, the vendor's permission layer when the
    terminal record lists the call among its denials, else nobody (``None``)."""
    decided = call.decided
    if decided is not None and isinstance(decided.decision, Deny):
        return f"metaharness ({decided.decided_by})"
    if call.requested.call_id in vendor_refused(state):
        kind = state.started.adapter if state.started is not None else "the vendor"
        return f"{kind}'s own permission layer (permission_denials)"
    return None


def effective_word(state: ViewState, call: CallView) -> str:
    """What happened to the call, for comparing runs: ``deny`` when anyone refused it, else the decision's
    word (``undecided`` when none came)."""
    if refused_by(state, call) is not None:
        return "deny"
    return decision_word(call.decided) if call.decided is not None else "undecided"


def refusal_lines(state: ViewState) -> tuple[str, ...]:
    """One line per refused call, naming who refused it."""
    return tuple(
        f"refused: {call.requested.name} {call.requested.call_id} by {who}"
        for call in all_calls(state) if (who := refused_by(state, call)) is not None
    )  # fmt: skip


def opaque_line(state: ViewState) -> str | None:
    """Every kind of record the adapter could not read, with its count, on one line."""
    if not state.opaque:
        return None
    kinds = sorted(state.opaque.items(), key=lambda item: item[1][0])
    return "records not read (opaque): " + ", ".join(f"{kind} ×{count}" for kind, (_, _, count) in kinds)


def latency_text(latency_ms: int | None) -> str:
    """``<N>ms``, or ``no latency`` when none was measured (a frame decides without a round trip)."""
    return "no latency" if latency_ms is None else f"{latency_ms}ms"


def remaining_ms(call: CallView, now: float) -> int | None:
    """How long an asked call has left before metaharness's own deadline, when it still waits."""
    requested = call.requested
    if call.decided is not None or not requested.decision_required or requested.deadline_ms is None:
        return None
    return max(0, requested.deadline_ms - int((now - call.requested_at) * 1000))


def request_parts(call: CallView, limit: int = INPUT_CHARACTERS) -> Parts:
    """``<name> <call id> <input>``, the input compact and cut to ``limit`` characters."""
    requested = call.requested
    return (
        (requested.name, "tool"),
        (f" {requested.call_id} ", "dim"),
        (shortened(_input_text(requested.input), limit), ""),
    )


def decision_parts(call: CallView, now: float | None = None) -> Parts:
    """The decision (who, on which seam, how long, why), an asked call's countdown while it waits
    (``now`` given), or what is known while nothing has decided."""
    decided = call.decided
    requested = call.requested
    if decided is None:
        if not requested.decision_required:
            return (("not decided", "dim"), (f" (seam {requested.seam})", "dim"))
        left = remaining_ms(call, now) if now is not None else None
        due = f"{requested.deadline_ms}ms" if left is None else f"{left // 1000}s left"
        return (("asks the embedder", "pending"), (f" — answer due, {due}", "pending"))
    word = decision_word(decided)
    parts: list[tuple[str, str]] = [
        (word, word),
        (f" by {decided.decided_by} on {decided.seam}, {latency_text(decided.latency_ms)}", "dim"),
    ]
    why = decision_why(decided)
    if why:
        parts.append((f": {why}", word))
    return tuple(parts)


def result_parts(call: CallView) -> Parts:
    """``ok``/``error`` and bytes, or nothing while no result has come."""
    result = call.result
    if result is None:
        return ()
    word = "error" if result.is_error else "ok" if result.is_error is False else "result"
    size = "bytes not reported" if result.bytes is None else f"{result.bytes} bytes"
    return ((word, "error" if result.is_error else "ok"), (f", {size}", "dim"))


def call_parts(call: CallView, now: float | None = None) -> Parts:
    """A call on one line: request, then decision, then result."""
    tail = result_parts(call)
    return (
        *request_parts(call),
        ("  → ", "dim"),
        *decision_parts(call, now),
        *((("  → ", "dim"), *tail) if tail else ()),
    )


def plain(parts: Parts) -> str:
    """The parts as plain text."""
    return "".join(text for text, _ in parts)


_STATE_VERDICTS = {"imposed": "ok", "declared": "unk", "unavailable": "gap"}


class HermeticRow(msgspec.Struct, frozen=True, kw_only=True):
    """One hermetic row: ``verdict`` is the run's own check of it against the record
    (``session.ended.rows``) when the stream has one, else what the attestation alone supports
    (imposed → ok, declared → unk, unavailable → gap), ``text`` the check's detail or the attested how
    or why; ``control`` is empty for a row this build does not know."""

    row: str
    control: str
    state: str
    verdict: str
    text: str


def hermetic_rows(hermetic: Hermetic | None, checked: Sequence[RowCheck] = ()) -> tuple[HermeticRow, ...]:
    """Every row the attestation names, known rows in their order, then any other in its order; a row
    in ``checked`` takes its verdict and detail from there."""
    if hermetic is None:
        return ()
    named = [(entry.row, "imposed", entry.how) for entry in hermetic.imposed]
    named += [(entry.row, "declared", entry.how) for entry in hermetic.declared]
    named += [(why.row, "unavailable", why.why) for why in hermetic.unavailable]
    order = {row: position for position, (row, *_) in enumerate(ROWS)}
    described = {row: control for row, control, _, _ in ROWS}
    checks = {check.row: check for check in checked}
    return tuple(
        HermeticRow(row=row, control=described.get(row, ""), state=state,
                    verdict=checks[row].verdict if row in checks else _STATE_VERDICTS[state],
                    text=checks[row].detail if row in checks else text)
        for row, state, text in sorted(named, key=lambda entry: order.get(entry[0], len(ROWS)))
    )  # fmt: skip


def checked_rows(state: ViewState) -> tuple[RowCheck, ...]:
    """The rows as the run checked them against the record (``session.ended.rows``); none in a stream
    without them (a replay, an older build, a run that ended with no terminal record)."""
    rows = state.ended.rows if state.ended is not None else UNSET
    return () if isinstance(rows, UnsetType) else rows


def state_rows(state: ViewState) -> tuple[HermeticRow, ...]:
    """The rows a reader shows (docs/view.md): the attestation's, with the run's checks."""
    return hermetic_rows(state.started.hermetic if state.started is not None else None, checked_rows(state))


def rows_caption(state: ViewState) -> str:
    """What the rows' verdicts rest on: the run's check against the record, or the attestation alone."""
    return "hermetic rows, as the run checked them against the record" if checked_rows(state) else "hermetic rows, as attested"


def confinement_text(hermetic: Hermetic | None) -> str:
    """What the attestation says of the child's view of the filesystem (row H12)."""
    if hermetic is None:
        return "not stated"
    stated = [f"{row.state}: {row.text}" for row in hermetic_rows(hermetic) if row.row == "H12"]
    return stated[0] if stated else "not attested"


def header_fields(state: ViewState) -> tuple[tuple[str, str], ...]:
    """(label, value) pairs of the run's header."""
    started = state.started
    hermetic = started.hermetic if started is not None else None
    unknown = "not stated"
    return (
        ("run", state.run or unknown),
        ("kind", started.adapter if started is not None else unknown),
        ("version", (started.harness_version if started is not None else None) or unknown),
        ("model", (started.model if started is not None else None) or unknown),
        ("directory", (started.cwd if started is not None else None) or unknown),
        ("decisions", hermetic.decisions if hermetic is not None else unknown),
        ("frame", state.frame_digest[:SHORT_DIGEST] if state.frame_digest is not None else "none in force"),
        ("confinement", confinement_text(hermetic)),
        ("hermetic", hermetic.mode if hermetic is not None else unknown),
    )


def stop_text(state: ViewState) -> str:
    """How the session ended, in the terminal record's words."""
    ended = state.ended
    if ended is None:
        return "no terminal record"
    words = [f"{name} {value}" for name, value in (
        ("subtype", ended.subtype), ("stop reason", ended.stop_reason), ("terminal reason", ended.terminal_reason),
    ) if value is not None]
    if ended.is_error:
        words.append("is_error")
    if ended.num_turns is not None:
        words.append(f"{ended.num_turns} turn(s)")
    return ", ".join(words) or "nothing stated"


def implied_exit(state: ViewState) -> tuple[str, int | None]:
    """The child's exit and the exit an unaudited run of this stream has (0 when it closed
    ``completed``, else 3); ``None`` when the stream has no closing marker."""
    if not state.closings:
        return "unknown", None
    closed = state.closings[-1][1]
    return child_exit_text(closed.process), unaudited_exit(closed.reason)


def turn_text(turn: TurnStarted) -> str:
    """``turn N``, with the frame in force when one is."""
    frame = f" · frame {turn.frame_digest[:SHORT_DIGEST]}" if turn.frame_digest is not None else ""
    return f"turn {turn.turn}{frame}"


def _header_lines(state: ViewState) -> tuple[str, ...]:
    fields = dict(header_fields(state))
    return (
        f"run {fields['run']} · {fields['kind']} {fields['version']} · model {fields['model']}",
        f"  directory {fields['directory']}",
        f"  decisions {fields['decisions']} · frame {fields['frame']} · hermetic {fields['hermetic']}",
        f"  confinement {fields['confinement']}",
    )


def _note_line(note: Note) -> str:
    if note.kind in ("text", "thinking"):
        return f"{note.kind}: " + note.text.replace("\n", "\n  ")
    return f"{note.kind} {note.label}: {note.text}"


def open_note(state: ViewState) -> Note | None:
    """The text or thinking still streaming: the last entry, when the last line read continued it."""
    last = last_entry(state)
    if isinstance(last, Note) and last.kind in ("text", "thinking") and state.last_event == last.kind:
        return last
    return None


def plain_lines(before: ViewState, after: ViewState, item: EventLine | Malformed) -> tuple[str, ...]:
    """The plain-text lines one more line adds: a run of text or thinking is printed whole once
    another line closes it; a call prints a line when requested, when decided and at its result."""
    lines: list[str] = []
    opened = open_note(before)
    continues = opened is not None and not isinstance(item, Malformed) and event_name(item.payload) == opened.kind
    if opened is not None and not continues:
        lines.append(_note_line(opened))
    if isinstance(item, Malformed):
        last = last_entry(after)
        return (*lines, _note_line(last)) if isinstance(last, Note) else tuple(lines)
    payload = item.payload
    if isinstance(payload, SessionStarted) and before.started is None:
        lines += _header_lines(after)
    elif isinstance(payload, ToolRequested | ToolDecided | ToolResult):
        call = call_of(after, payload.call_id)
        if call is not None:
            lines.append(_call_line(call, payload))
    elif isinstance(payload, TurnStarted):
        lines.append(turn_text(payload))
    elif isinstance(payload, SessionEnded):
        lines.append(f"session ended: {stop_text(after)}")
    elif isinstance(payload, StreamClosed):
        lines.append(f"stream closed: {payload.reason}")
    elif isinstance(payload, Opaque):
        last = last_entry(after)
        if len(after.timeline) > len(before.timeline) and isinstance(last, Note):
            lines.append(_note_line(last))
    elif not isinstance(payload, Text | Thinking):
        note = _note_of(payload)
        if note is not None:
            lines.append(_note_line(note))
    return tuple(lines)


def _call_line(call: CallView, payload: ToolRequested | ToolDecided | ToolResult) -> str:
    requested = call.requested
    if isinstance(payload, ToolRequested):
        asks = (f", asks the embedder within {requested.deadline_ms}ms"
                if requested.decision_required and requested.deadline_ms is not None
                else ", asks the embedder" if requested.decision_required else "")
        return f"call {plain(request_parts(call))} requested on {requested.seam}{asks}"
    head = f"call {requested.name} {requested.call_id}"
    if isinstance(payload, ToolDecided):
        return f"{head} {plain(decision_parts(msgspec.structs.replace(call, decided=payload)))}"
    return f"{head} {plain(result_parts(msgspec.structs.replace(call, result=payload)))}"


def hermetic_line(row: HermeticRow) -> str:
    """One row: id, verdict, state, then the attested how or why."""
    text = f" — {row.text}" if row.text else ""
    return f"  {row.row.ljust(4)} {row.verdict.ljust(3)} {row.state.ljust(11)} {row.control}{text}"


def closing_lines(state: ViewState) -> tuple[str, ...]:
    """What the view prints at the end of input: any text still open, the census, the withheld
    tools, the hermetic rows, the stop reason, the stream's completeness and the implied exit."""
    opened = open_note(state)
    lines = [_note_line(opened)] if opened is not None else []
    lines += census_lines(final_census(state))
    lines += refusal_lines(state)
    opaque = opaque_line(state)
    lines += [opaque] if opaque is not None else []
    lines.append(withheld_line(state.started.withheld if state.started is not None else None))
    rows = state_rows(state)
    if rows:
        lines.append("hermetic rows (as the run checked them against the record):" if checked_rows(state)
                     else "hermetic rows (as attested; the audited report also checks the record):")
        lines += [hermetic_line(row) for row in rows]
    lines.append(f"stop: {stop_text(state)}")
    lines.append(completeness_line(state))
    child, implied = implied_exit(state)
    exit_words = "no exit is implied without a closing marker" if implied is None else f"the stream implies exit {implied}"
    lines.append(f"child exit: {child}; {exit_words}")
    if state.malformed:
        lines.append(f"{state.malformed} malformed line(s) shown and skipped")
    return tuple(lines)


def fold_lines(lines: Sequence[EventLine | Malformed]) -> ViewState:
    """The state after every line, read at clock reading zero (a stream read afterwards)."""
    state = ViewState()
    for line in lines:
        state = fold_view(state, line, 0.0)
    return state


def progress_lines(before: ViewState, after: ViewState, item: EventLine) -> tuple[str, ...]:
    """What ``run`` prints on a terminal's stderr for one more event (docs/cli.md#progress-on-stderr):
    one start line, one line per call (when it is decided, or at its result when nothing decides it;
    an asked call also when it starts waiting), and one summary line when the stream closes; each one
    line, its control characters escaped (:func:`shown`)."""
    return tuple(shown(line, one_line=True) for line in _progress_text(before, after, item))


def _progress_text(before: ViewState, after: ViewState, item: EventLine) -> tuple[str, ...]:
    payload = item.payload
    if isinstance(payload, SessionStarted) and before.started is None:
        fields = dict(header_fields(after))
        started = (f"metaharness: run {fields['run']} started: {fields['kind']} {fields['version']} · model "
                   f"{fields['model']} · decisions {fields['decisions']} · frame {fields['frame']}")  # fmt: skip
        return (started,)
    if isinstance(payload, ToolRequested) and payload.decision_required:
        call = call_of(after, payload.call_id)
        due = f" within {payload.deadline_ms}ms" if payload.deadline_ms is not None else ""
        return (f"metaharness: call {plain(request_parts(call))} asks the embedder{due}",) if call is not None else ()
    if isinstance(payload, ToolDecided | ToolResult):
        call = call_of(after, payload.call_id)
        if call is None or (isinstance(payload, ToolResult) and call.decided is not None):
            return ()
        return (f"metaharness: call {call.requested.name} {call.requested.call_id} → {plain(decision_parts(call))}",)
    if isinstance(payload, StreamClosed):
        census = final_census(after)
        summary = (f"metaharness: run {after.run} closed {payload.reason}: {len(after.calls)} call(s), allowed="
                   f"{census.allowed} denied={census.denied} replaced={census.replaced} abstained={census.abstained}")  # fmt: skip
        return (summary,)
    return ()
