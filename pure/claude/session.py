"""A live claude run as a pure state machine: the CLI's stdout (its record and its control requests), the
decision desk and the stream, folded together (docs/adapters/claude.md#in-band-decisions;
docs/adapters/common.md#vendor-decisions; docs/events.md#stream-ending, #commands; docs/decisions.md;
docs/events.md#census).

Each input returns the new ``Session`` and the effects the shell performs **in order**:

* :class:`~metaharness.pure.events.EventValue` — one event for the run's stream writer;
* :class:`ToChild` — one line to write to the CLI's stdin (``initialize``, the user turn, an answer);
* :class:`EndInput` — close the CLI's stdin (its terminal record was read);
* :class:`Refuse` — stop the child and refuse the run (the ``initialize`` reply did not confirm the hooks);
* ``Arm``/``Disarm`` (``metaharness.pure.decisions``) — start or stop a call's deadline timer.

Inputs: :func:`open_session` (its effects begin with ``initialize``), :func:`read_line` (one stdout line),
:func:`take_command` (one framed ``metaharness.command/1``), :data:`STEPS` (the protocol every live loop steps:
a deadline fired, interrupt, halt or a signal, the end of the record; ``metaharness.pure.session_steps``) and
:func:`wind_up`. An answer
for a call whose every request the CLI withdrew (``control_cancel_request``) is recorded as a deny by
``deadline`` saying the CLI gave up first (docs/decisions.md#deadlines).
"""

from __future__ import annotations

from functools import partial
from typing import TypeAlias

import msgspec
from immutables import Map
from msgspec import UNSET, UnsetType
from returns.result import Failure

from metaharness.pure.budgets import CALLBACK_TIMEOUT_S
from metaharness.pure.census import ZERO_CENSUS, counted
from metaharness.pure.claude.control import (
    CLI_GAVE_UP,
    INITIALIZE_ID,
    HookCallback,
    Reply,
    Unserved,
    Withdrawn,
    answer_body,
    answer_line,
    check_initialize_reply,
    forged_reply,
    initialize_line,
    input_forged,
    read_control,
    replayed_turn,
    unserved_line,
    user_message_line,
)
from metaharness.pure.claude.rendering import is_describing_question, resolve_claude_call
from metaharness.pure.claude.seam import (
    BUDGET_WORDS,
    RecordState,
    SessionFacts,
    map_record,
    terminal_stop,
)
from metaharness.pure.claude.vendor import HONOURED_COMMANDS
from metaharness.pure.commands import (
    Steering,
    ToolDecide,
)
from metaharness.pure.correlation import Correlator, Present, on_hook_call, on_readings, on_stream_end
from metaharness.pure.decisions import (
    Answer,
    Arm,
    Control,
    Desk,
    Disarm,
    PresentedCall,
    open_desk,
    pending_call,
    present,
    steer,
)
from metaharness.pure.decisions import Emit as DeskEmit
from metaharness.pure.events import (
    Census,
    Deny,
    Event,
    EventValue,
    Process,
    Replace,
    SessionEnded,
    Stream,
    ToolDecided,
    WarningRaised,
    closing_marker,
    note,
    result_unobserved,
)
from metaharness.pure.frames import Frame
from metaharness.pure.hook_channel import HookCall, request_unreadable
from metaharness.pure.modes import DecisionMode
from metaharness.pure.readings import Emitted
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_stages import closing_reason, no_terminal_record
from metaharness.pure.session_steps import desk_steps
from metaharness.pure.stop import GROUP_POLICY
from metaharness.pure.subjects import TreeFacts, resolve_subjects

ADAPTER = "claude"

STOP_POLICY = GROUP_POLICY
"""Every stop is SIGTERM to the group, SIGKILL 5 s later (or at a second signal)."""


class ToChild(msgspec.Struct, frozen=True):
    """Write ``line`` (one stream-json line with its ``\\n``) to the CLI's stdin."""

    line: bytes


class EndInput(msgspec.Struct, frozen=True):
    """Close the CLI's stdin: its terminal record was read, so no answer is owed any more."""


class Refuse(msgspec.Struct, frozen=True):
    """Stop the child and refuse the run with ``refusal`` (exit 2)."""

    refusal: Refusal


Effect: TypeAlias = EventValue | ToChild | EndInput | Refuse | Arm | Disarm
Item: TypeAlias = DeskEmit | Answer | Arm | Disarm | Emitted | Present
"""What the session works through in order: desk effects and what the correlator released."""


class Session(msgspec.Struct, frozen=True, kw_only=True):
    """One claude run's state between inputs: ``waiting`` gives each call the ``hook_callback`` requests
    still owed its answer, in order; ``withdrawn`` the calls the CLI stopped waiting for; ``turn`` the user turn sent
    once ``initialize`` is confirmed, ``echoed`` whether the CLI has echoed it back and ``answers`` each answer
    written whose echo has not come back yet (``--replay-user-messages``)."""

    facts: SessionFacts
    stream: Stream
    desk: Desk
    turn: str = ""
    confirmed: bool = False
    echoed: bool = False
    record: RecordState = RecordState()
    correlator: Correlator = Correlator(live=True)
    census: Census = ZERO_CENSUS
    waiting: Map[str, tuple[str, ...]] = Map()
    callers: Map[str, tuple[str, ...]] = Map()
    """``waiting`` read the other way: the calls each request waits for."""
    withdrawn: Map[str, bool] = Map()
    answers: Map[str, bytes] = Map()
    ended: SessionEnded | None = None
    tree: TreeFacts | None = None


def open_session(
    facts: SessionFacts,
    run: str,
    mode: DecisionMode,
    frame: Frame | None,
    plan_warnings: tuple[WarningRaised, ...] = (),
    *,
    turn: str = "",
    live: bool = True,
    vendor_budget_ms: int = CALLBACK_TIMEOUT_S * 1000,
) -> tuple[Session, tuple[Effect, ...]]:
    """A run's session: the plan-time warnings (``AMBIENT_INPUT``) are written first, then ``initialize``
    goes to the CLI with the callback's timeout, ``vendor_budget_ms`` (``run --decision-deadline`` + 5 s,
    docs/decisions.md#deadlines); ``turn`` follows once the reply confirms the hooks."""
    session = Session(
        facts=facts, stream=Stream(run), desk=open_desk(mode, frame, vendor_budget_ms), turn=turn,
        correlator=Correlator(live=live),
    )  # fmt: skip
    session, effects = _emit_all(session, tuple(DeskEmit(w) for w in plan_warnings))
    return session, (*effects, ToChild(initialize_line(vendor_budget_ms // 1000)))


def _write(session: Session, payload: Event, at: str | UnsetType = UNSET) -> tuple[Session, EventValue]:
    """Note one event; ``tool.decided`` is counted and ``session.ended`` gets the census so far
    (docs/events.md#census)."""
    census, ended, payload = counted(session.census, session.ended, payload)
    stream, line = note(session.stream, payload, at)
    return msgspec.structs.replace(session, stream=stream, census=census, ended=ended), line


def _emit_all(session: Session, items: tuple[Item, ...]) -> tuple[Session, tuple[Effect, ...]]:
    """Work through ``items`` in order: events are noted, a ``Present`` goes to the decision desk
    (its effects next), and an answer goes to every request of its call still waiting; a call the CLI
    withdrew gets none, and its ``tool.decided`` becomes a deny by ``deadline`` saying so."""
    out: list[Effect] = []
    pending = list(items)
    gave_up: set[str] = set()
    while pending:
        item = pending.pop(0)
        if isinstance(item, DeskEmit):
            event = item.event
            if isinstance(event, ToolDecided) and event.call_id in gave_up:
                event = msgspec.structs.replace(event, decision=Deny(CLI_GAVE_UP), decided_by="deadline")
            session, line = _write(session, event)
            out.append(line)
        elif isinstance(item, Emitted):
            session, line = _write(session, item.payload, item.at)
            out.append(line)
        elif isinstance(item, Present):
            session, effects = _present(session, item.call)
            pending[:0] = effects
        elif isinstance(item, Answer):
            requests = session.waiting.get(item.call_id, ())
            if not requests and item.call_id in session.withdrawn:
                gave_up.add(item.call_id)
            answers = session.answers
            for request in requests:
                body = answer_body(request, item.decision)
                answers = answers.set(request, body)
                out.append(ToChild(answer_line(body)))
            session = msgspec.structs.replace(_answered(session, item.call_id), answers=answers)
        else:
            out.append(item)
    return session, tuple(out)


def write_events(session: Session, events: tuple[Event, ...]) -> tuple[Session, tuple[Effect, ...]]:
    """Events the run observed outside the record (the loopback proxy's ``auth.expired``), written now."""
    return _emit_all(session, tuple(DeskEmit(event) for event in events))


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
    waiting = session.waiting.set(call.call_id, (*session.waiting.get(call.call_id, ()), call.key))
    callers = session.callers.set(call.key, (*session.callers.get(call.key, ()), call.call_id))
    session = msgspec.structs.replace(session, waiting=waiting, callers=callers)
    desk, effects = present(session.desk, presented)
    return msgspec.structs.replace(session, desk=desk), effects


def read_line(
    session: Session, number: int, raw: bytes, tree: TreeFacts | None = None
) -> tuple[Session, tuple[Effect, ...]]:
    """One stdout line (1-based ``number``, terminator removed). A control message is the seam
    (docs/adapters/claude.md#in-band-decisions): the ``initialize`` reply is checked, a ``hook_callback`` goes to
    the correlator (``tree``: the links its subjects pass through, laid over what the session knew), a
    ``control_cancel_request`` withdraws its request, any other request is answered with an error and
    recorded ``opaque``. Anything else is the record: through the reader and correlator, the terminal record
    first releasing every held call by path (b), then closing the CLI's stdin."""
    control = read_control(raw)
    if isinstance(control, Reply):
        return _replied(session, control)
    if isinstance(control, Withdrawn):
        return _withdrawn(session, control.request_id), ()
    if isinstance(control, HookCallback):
        if tree is not None:
            session = msgspec.structs.replace(session, tree=tree if session.tree is None else session.tree.merged(tree))
        correlator, outputs = on_hook_call(session.correlator, control.call)
        return _emit_all(msgspec.structs.replace(session, correlator=correlator), outputs)
    echo = replayed_turn(raw)
    if echo is not None and echo == session.turn and not session.echoed:
        return msgspec.structs.replace(session, echoed=True), ()
    record, readings = map_record(session.record, raw, number, session.facts)
    correlator = session.correlator
    released: list[Item] = [] if echo is None else [DeskEmit(input_forged("a user message"))]
    for reading in readings:
        if isinstance(reading, Emitted) and isinstance(reading.payload, SessionEnded):
            correlator, outputs = on_stream_end(correlator)
            released += outputs
        correlator, outputs = on_readings(correlator, (reading,))
        released += outputs
    ended = session.ended is not None
    session, effects = _emit_all(msgspec.structs.replace(session, record=record, correlator=correlator), tuple(released))
    if isinstance(control, Unserved):
        effects = (ToChild(unserved_line(control)), *effects)
    if session.ended is not None and not ended:
        effects = (*effects, EndInput())
    return session, effects


def _replied(session: Session, reply: Reply) -> tuple[Session, tuple[Effect, ...]]:
    """The ``initialize`` reply: confirmed, the user turn goes to the CLI; else the run is refused. The echo of
    an answer metaharness wrote is dropped; any other reply is ``INPUT_FORGED``."""
    if session.answers.get(reply.request_id) == reply.body:
        return msgspec.structs.replace(session, answers=session.answers.delete(reply.request_id)), ()
    if reply.request_id != INITIALIZE_ID or session.confirmed:
        return _emit_all(session, (DeskEmit(forged_reply(reply)),))
    checked = check_initialize_reply(reply.raw)
    if isinstance(checked, Failure):
        return session, (Refuse(checked.failure()),)
    return msgspec.structs.replace(session, confirmed=True), (ToChild(user_message_line(session.turn)),)


def _withdrawn(session: Session, request_id: str) -> Session:
    """The CLI stopped waiting for ``request_id``; a call with no request left waiting is withdrawn."""
    waiting, withdrawn = session.waiting, session.withdrawn
    for call_id in session.callers.get(request_id, ()):
        left = tuple(request for request in waiting.get(call_id, ()) if request != request_id)
        if left:
            waiting = waiting.set(call_id, left)
        else:
            waiting, withdrawn = waiting.delete(call_id) if call_id in waiting else waiting, withdrawn.set(call_id, True)
    callers = session.callers.delete(request_id) if request_id in session.callers else session.callers
    return msgspec.structs.replace(session, waiting=waiting, callers=callers, withdrawn=withdrawn)


def _answered(session: Session, call_id: str) -> Session:
    """``call_id`` answered: none of its requests waits for it any longer."""
    callers = session.callers
    for request in session.waiting.get(call_id, ()):
        left = tuple(caller for caller in callers.get(request, ()) if caller != call_id)
        callers = callers.set(request, left) if left else callers.delete(request) if request in callers else callers
    waiting = session.waiting.delete(call_id) if call_id in session.waiting else session.waiting
    return msgspec.structs.replace(session, waiting=waiting, callers=callers)


def callback_subjects(session: Session, raw: bytes) -> tuple[str, ...]:
    """The subjects a ``hook_callback`` line's call names as spelled (none for any other line), so the shell
    can look up their links before :func:`read_line`."""
    control = read_control(raw)
    if not isinstance(control, HookCallback):
        return ()
    call = control.call
    return resolve_claude_call(call.name, call.input, session.record.cwd, session.facts.catalogue)[1]


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
    replacement = partial(_replacement, session)
    desk, desk_effects, control = steer(session.desk, command, latency_ms, ADAPTER, HONOURED_COMMANDS, replacement)
    session, effects = _emit_all(msgspec.structs.replace(session, desk=desk), desk_effects)
    return session, effects, control


STEPS = desk_steps(_emit_all, take_command)
"""The claude session's steps every live loop takes (``metaharness.pure.session_steps``)."""


def wind_up(
    session: Session,
    *,
    stderr_tail: bytes = b"",
    halted: bool = False,
    killed: bool = False,
    process: Process,
    late: tuple[Event, ...] = (),
) -> tuple[Session, tuple[Effect, ...], str]:
    """Close the stream after the end of the record (``STEPS.end_of_record``): ``RESULT_UNOBSERVED``
    naming the calls that never got a result, ``NO_TERMINAL_RECORD`` when no ``result`` was read (not after a ``halt``), the wind-up's own events (the loopback proxy's
    ``auth.expired``, ``LOOPBACK_REFUSED``, ``RETAIN_FAILED``), then ``stream.closed``; and its reason."""
    unobserved = result_unobserved(session.stream)
    extra: list[Item] = [] if unobserved is None else [DeskEmit(unobserved)]
    if session.ended is None and not halted:
        extra.append(DeskEmit(no_terminal_record(stderr_tail)))
    extra += [DeskEmit(event) for event in late]
    session, more = _emit_all(session, tuple(extra))
    reason = closing_reason(halted=halted, killed=killed, stop=terminal_stop(session.ended), budget_stops=BUDGET_WORDS)
    stream, line = note(session.stream, closing_marker(session.stream, reason, process))
    return msgspec.structs.replace(session, stream=stream), (*more, line), reason

