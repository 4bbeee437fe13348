"""A live claude run as a pure state machine: the record, the hook channel, the decision desk and the
stream, folded together (docs/adapters/common.md#vendor-decisions; docs/adapters/claude.md,
docs/events.md#stream-ending, #commands; docs/decisions.md; docs/events.md#census).

Each input returns the new ``Session`` and the effects the shell performs **in order**:

* ``bytes`` — one stamped event line to write to stdout;
* :class:`HookAnswer` — write ``body`` to each of ``keys`` through the hook channel, then call
  :func:`answered` with whether the hook was still waiting; the effects after it arrive from there;
* ``Arm``/``Disarm`` (``metaharness.pure.decisions``) — start or stop a call's deadline timer.

Inputs: :func:`open_session`, :func:`read_line` (one transcript line), :func:`hook_request` (a key the
doorbell rang), :func:`take_command` (one framed ``metaharness.command/1``), :func:`expire` (a
deadline fired), :func:`abandon_pending` (interrupt, halt or a signal), :func:`end_of_record` and
:func:`wind_up`. A hook answer that finds no reader (the hook's backstop denied first) is recorded as
a deny by ``deadline`` saying the hook gave up first (docs/adapters/common.md#vendor-decisions).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType
from returns.result import Failure

from metaharness.pure.capabilities import HONOURED_COMMANDS
from metaharness.pure.census import ZERO_CENSUS, count_decision
from metaharness.pure.claude.rendering import is_describing_question, resolve_claude_call
from metaharness.pure.claude.seam import (
    BUDGET_WORDS,
    RecordState,
    SessionFacts,
    claude_hook_answer,
    map_record,
    terminal_stop,
)
from metaharness.pure.commands import (
    Halt,
    Steering,
    ToolDecide,
    check_supported,
    check_well_formed,
    command_ok,
)
from metaharness.pure.correlation import Correlator, Present, on_hook_call, on_readings, on_stream_end
from metaharness.pure.decisions import (
    AbandonCause,
    Answer,
    Arm,
    Desk,
    Disarm,
    PresentedCall,
    abandon,
    decide,
    open_desk,
    pending_call,
    present,
)
from metaharness.pure.decisions import Emit as DeskEmit
from metaharness.pure.decisions import expire as desk_expire
from metaharness.pure.events import (
    Census,
    Deny,
    Event,
    Process,
    Replace,
    SessionEnded,
    Stream,
    ToolDecided,
    WarningRaised,
    closing_marker,
    result_unobserved,
    stamp,
)
from metaharness.pure.frames import Frame
from metaharness.pure.hook_channel import (
    CHANNEL_REFUSED_REASON,
    HOOK_GAVE_UP,
    HOOK_TIMEOUT_S,
    HookCall,
    read_hook_request,
    request_unreadable,
)
from metaharness.pure.modes import DecisionMode
from metaharness.pure.readings import Emitted
from metaharness.pure.run_stages import closing_reason, no_terminal_record
from metaharness.pure.stop import GROUP_POLICY
from metaharness.pure.subjects import TreeFacts, resolve_subjects

ADAPTER = "claude"
VENDOR_BUDGET_MS = HOOK_TIMEOUT_S * 1000
"""The hook's declared timeout × 1000: metaharness's deadline is 55,000 ms (docs/decisions.md#deadlines)."""

Control: TypeAlias = Literal["interrupt", "halt"] | None

STOP_POLICY = GROUP_POLICY
"""Every stop is SIGTERM to the group, SIGKILL 5 s later (or at a second signal)."""


class HookAnswer(msgspec.Struct, frozen=True):
    """Write ``body`` to the hook channel under each of ``keys`` for ``call_id``."""

    call_id: str
    keys: tuple[str, ...]
    body: bytes


Effect: TypeAlias = bytes | HookAnswer | Arm | Disarm
Item: TypeAlias = DeskEmit | Answer | Arm | Disarm | Emitted | Present
"""What the session works through in order: desk effects and what the correlator released."""


class Session(msgspec.Struct, frozen=True, kw_only=True):
    """One claude run's state between inputs."""

    facts: SessionFacts
    stream: Stream
    desk: Desk
    record: RecordState = RecordState()
    correlator: Correlator = Correlator(live=True)
    census: Census = ZERO_CENSUS
    waiting: tuple[tuple[str, str], ...] = ()
    queued: tuple[Item, ...] = ()
    answering: str | None = None
    ended: SessionEnded | None = None
    tree: TreeFacts | None = None


def open_session(
    facts: SessionFacts,
    run: str,
    mode: DecisionMode,
    frame: Frame | None,
    plan_warnings: tuple[WarningRaised, ...] = (),
    *,
    live: bool = True,
    vendor_budget_ms: int = VENDOR_BUDGET_MS,
) -> tuple[Session, tuple[Effect, ...]]:
    """A run's session; the plan-time warnings (``AMBIENT_INPUT``) are written first; ``vendor_budget_ms`` is
    the hook's timeout (``run --decision-deadline`` + 5 s, docs/decisions.md#deadlines)."""
    session = Session(
        facts=facts, stream=Stream(run), desk=open_desk(mode, frame, vendor_budget_ms), correlator=Correlator(live=live)
    )
    return _emit_all(session, tuple(DeskEmit(w) for w in plan_warnings))


def _write(session: Session, payload: Event, at: str | UnsetType = UNSET) -> tuple[Session, bytes]:
    """Stamp one event; ``tool.decided`` is counted and ``session.ended`` gets the census so far
    (docs/events.md#census)."""
    census = session.census
    if isinstance(payload, ToolDecided):
        census = count_decision(census, payload)
    ended = session.ended
    if isinstance(payload, SessionEnded):
        payload = ended = msgspec.structs.replace(payload, census=census)
    stream, line = stamp(session.stream, payload, at)
    return msgspec.structs.replace(session, stream=stream, census=census, ended=ended), line


def _emit_all(session: Session, items: tuple[Item, ...]) -> tuple[Session, tuple[Effect, ...]]:
    """Work through ``items`` in order: events are stamped, a ``Present`` goes to the decision desk
    (its effects next), and a hook answer stops the walk until :func:`answered` resumes it, so every
    line is stamped in the order it is written."""
    out: list[Effect] = []
    pending = list(items)
    while pending:
        item = pending.pop(0)
        if isinstance(item, DeskEmit):
            session, line = _write(session, item.event)
            out.append(line)
        elif isinstance(item, Emitted):
            session, line = _write(session, item.payload, item.at)
            out.append(line)
        elif isinstance(item, Present):
            session, effects = _present(session, item.call)
            pending[:0] = effects
        elif isinstance(item, Answer):
            keys = tuple(key for call_id, key in session.waiting if call_id == item.call_id)
            if not keys:
                continue
            session = msgspec.structs.replace(
                session,
                waiting=tuple(entry for entry in session.waiting if entry[0] != item.call_id),
                queued=tuple(pending),
                answering=item.call_id,
            )
            out.append(HookAnswer(item.call_id, keys, claude_hook_answer(item.decision)))
            return session, tuple(out)
        else:
            out.append(item)
    return session, tuple(out)


def write_events(session: Session, events: tuple[Event, ...]) -> tuple[Session, tuple[Effect, ...]]:
    """Events the run observed outside the record (the loopback proxy's ``auth.expired``), written now."""
    return _emit_all(session, tuple(DeskEmit(event) for event in events))


def answered(
    session: Session, delivered: bool, refused: tuple[WarningRaised, ...] = ()
) -> tuple[Session, tuple[Effect, ...]]:
    """The hook answer was written; ``delivered`` says a hook was still waiting for it. When none was,
    the call's ``tool.decided`` becomes a deny by ``deadline`` saying the hook gave up first; when the
    answer met a refused channel name (``refused``, its ``CHANNEL_REFUSED`` warnings, written first) a
    deny by ``adapter`` saying so (docs/adapters/common.md#child-trees)."""
    queued = list(session.queued)
    if (refused or not delivered) and session.answering is not None:
        deny = Deny(CHANNEL_REFUSED_REASON) if refused else Deny(HOOK_GAVE_UP)
        queued = [
            DeskEmit(msgspec.structs.replace(item.event, decision=deny, decided_by="adapter" if refused else "deadline"))
            if isinstance(item, DeskEmit)
            and isinstance(item.event, ToolDecided)
            and item.event.call_id == session.answering
            else item
            for item in queued
        ]
    session = msgspec.structs.replace(session, queued=(), answering=None)
    return _emit_all(session, (*(DeskEmit(warning) for warning in refused), *queued))


def _present(session: Session, call: HookCall) -> tuple[Session, tuple[DeskEmit | Answer | Arm | Disarm, ...]]:
    """Hand a hook call to the decision desk on seam ``hook``, or ``owned_tool`` on a catalogue run
    (a catalogue entry is the owned tool); its key waits for the answer. ``ToolSearch`` is a describing question
    (``metaharness.pure.claude.rendering``)."""
    catalogue = session.facts.catalogue
    operations, subjects = resolve_claude_call(call.name, call.input, session.record.cwd, catalogue)
    if session.tree is not None:
        subjects = resolve_subjects(subjects, session.tree.cwd, session.tree.links)
    presented = PresentedCall(
        call_id=call.call_id, name=call.name, input=call.input, seam="hook" if catalogue is None else "owned_tool",
        operations=operations, subjects=subjects, catalogue_question=is_describing_question(call.name, catalogue),
        unreadable=request_unreadable(call),
    )  # fmt: skip
    session = msgspec.structs.replace(session, waiting=(*session.waiting, (call.call_id, call.key)))
    desk, effects = present(session.desk, presented)
    return msgspec.structs.replace(session, desk=desk), effects


def read_line(session: Session, number: int, raw: bytes) -> tuple[Session, tuple[Effect, ...]]:
    """One transcript line (1-based ``number``, terminator removed) through the reader and correlator.
    The terminal record first releases every held call by path (b)."""
    record, readings = map_record(session.record, raw, number, session.facts)
    correlator = session.correlator
    released: list[Item] = []
    for reading in readings:
        if isinstance(reading, Emitted) and isinstance(reading.payload, SessionEnded):
            correlator, outputs = on_stream_end(correlator)
            released += outputs
        correlator, outputs = on_readings(correlator, (reading,))
        released += outputs
    return _emit_all(msgspec.structs.replace(session, record=record, correlator=correlator), tuple(released))


def request_subjects(session: Session, key: str, raw: bytes) -> tuple[str, ...]:
    """The subjects a hook request's call names as spelled, so the shell can look up their links."""
    call = read_hook_request(key, raw)
    return resolve_claude_call(call.name, call.input, session.record.cwd, session.facts.catalogue)[1]


def hook_request(
    session: Session, key: str, raw: bytes | None, tree: TreeFacts | None = None
) -> tuple[Session, tuple[Effect, ...]]:
    """A key the doorbell rang, with its request file's bytes (``None``: missing → ``COVERAGE_GAP``)
    and the links its subjects pass through, laid over what the session knew of the tree."""
    if tree is not None:
        session = msgspec.structs.replace(session, tree=tree if session.tree is None else session.tree.merged(tree))
    if raw is None:
        warning = WarningRaised(
            code="COVERAGE_GAP",
            message=f"the hook channel rang for {key} but its request file is missing, so no call could be read",
        )
        session, line = _write(session, warning)
        return session, (line,)
    correlator, outputs = on_hook_call(session.correlator, read_hook_request(key, raw))
    return _emit_all(msgspec.structs.replace(session, correlator=correlator), outputs)


def _replacement(session: Session, command: ToolDecide) -> PresentedCall | None:
    """A ``replace``'s input read as the pending call would be (docs/decisions.md#admission), for the desk's check."""
    pending = pending_call(session.desk, command.call_id)
    if not isinstance(command.decision, Replace) or pending is None:
        return None
    operations, subjects = resolve_claude_call(pending.name, command.decision.input, session.record.cwd,
                                               session.facts.catalogue)  # fmt: skip
    if session.tree is not None:
        subjects = resolve_subjects(subjects, session.tree.cwd, session.tree.links)
    return msgspec.structs.replace(pending, input=command.decision.input, operations=operations, subjects=subjects)


def take_command(
    session: Session, command: Steering, latency_ms: int | None
) -> tuple[Session, tuple[Effect, ...], Control]:
    """Steps 2–4 of docs/events.md#commands for one framed command and the control the shell applies after the
    effects: ``tool.decide`` goes to the desk; ``interrupt`` and ``halt`` abandon pending calls first
    (their denies written to the hooks before any signal)."""
    formed = check_well_formed(command).bind(lambda ok: check_supported(ok.command, ADAPTER, HONOURED_COMMANDS))
    if isinstance(formed, Failure):
        session, effects = _emit_all(session, (DeskEmit(formed.failure()),))
        return session, effects, None
    if isinstance(command, ToolDecide):
        desk, desk_effects = decide(session.desk, command, latency_ms, _replacement(session, command))
        session, effects = _emit_all(msgspec.structs.replace(session, desk=desk), desk_effects)
        return session, effects, None
    control: Control = "halt" if isinstance(command, Halt) else "interrupt"
    desk, desk_effects = abandon(session.desk, "the run was halted" if control == "halt" else "the run was interrupted")
    session, effects = _emit_all(
        msgspec.structs.replace(session, desk=desk), (*desk_effects, DeskEmit(command_ok(command.id)))
    )
    return session, effects, control


def expire(session: Session, call_id: str, elapsed_ms: int) -> tuple[Session, tuple[Effect, ...]]:
    """A call's deadline fired ``elapsed_ms`` after arming: deny by ``deadline`` (docs/decisions.md#deadlines)."""
    desk, effects = desk_expire(session.desk, call_id, elapsed_ms)
    return _emit_all(msgspec.structs.replace(session, desk=desk), effects)


def abandon_pending(session: Session, why: AbandonCause) -> tuple[Session, tuple[Effect, ...]]:
    """Every pending call denied by ``adapter`` with ``PENDING_CALL_ABANDONED``
    (docs/decisions.md#correlation-and-abandonment)."""
    desk, effects = abandon(session.desk, why)
    return _emit_all(msgspec.structs.replace(session, desk=desk), effects)


def end_of_record(session: Session) -> tuple[Session, tuple[Effect, ...]]:
    """The transcript ended: every held call takes path (b) (docs/adapters/common.md#one-event-per-call), then every
    pending call is abandoned by the end of the stream (docs/decisions.md#correlation-and-abandonment), its deny
    handed to the hook first."""
    correlator, outputs = on_stream_end(session.correlator)
    session, released = _emit_all(msgspec.structs.replace(session, correlator=correlator), outputs)
    desk, effects = abandon(session.desk, "the stream ended")
    session, abandoned = _emit_all(msgspec.structs.replace(session, desk=desk), effects)
    return session, (*released, *abandoned)


def wind_up(
    session: Session,
    *,
    stderr_tail: bytes = b"",
    halted: bool = False,
    killed: bool = False,
    process: Process,
    late: tuple[Event, ...] = (),
) -> tuple[Session, tuple[Effect, ...], str]:
    """Close the stream after :func:`end_of_record`: ``RESULT_UNOBSERVED``
    naming the calls that never got a result, ``NO_TERMINAL_RECORD`` when no ``result`` was read (not after a ``halt``), the wind-up's own events (the loopback proxy's
    ``auth.expired``, ``LOOPBACK_REFUSED``, ``RETAIN_FAILED``), then ``stream.closed``; and its reason."""
    unobserved = result_unobserved(session.stream)
    extra: list[Item] = [] if unobserved is None else [DeskEmit(unobserved)]
    if session.ended is None and not halted:
        extra.append(DeskEmit(no_terminal_record(stderr_tail)))
    extra += [DeskEmit(event) for event in late]
    session, more = _emit_all(session, tuple(extra))
    reason = closing_reason(halted=halted, killed=killed, stop=terminal_stop(session.ended), budget_stops=BUDGET_WORDS)
    stream, line = stamp(session.stream, closing_marker(session.stream, reason, process))
    return msgspec.structs.replace(session, stream=stream), (*more, line), reason

