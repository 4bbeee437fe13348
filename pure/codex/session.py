"""A live codex run as a pure state machine: the rollout, the hook channel, the decision desk and the
stream folded together, and on a catalogue run the ``codex app-server`` conversation
(``metaharness.pure.codex.app_server``) with its catalogue server (docs/adapters/codex.md).

Each input returns the new ``Session`` and the effects the shell performs **in order**:

* :class:`~metaharness.pure.events.EventValue` — one event for the run's stream writer;
* :class:`HookAnswer` — write ``body`` to ``key`` through the hook channel, then call :func:`delivered`
  with whether the hook was still waiting; the effects after it arrive from there;
* ``Perform`` — write ``line`` to the catalogue server's stdin, then call :func:`delivered` with whether
  it was written; the effects after it arrive from there;
* ``Send`` — write ``line`` to the app-server's stdin (a server that has gone is no error of the run);
* ``Note`` — a line for metaharness's stderr;
* ``Arm``/``Disarm`` (``metaharness.pure.decisions``) — start or stop a call's deadline timer.

A hook answer that finds no reader (the hook's backstop denied first) turns the call's ``tool.decided``
into a deny by ``deadline`` saying the hook gave up first; a turn that ended abandons every pending call.
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec
from immutables import Map
from msgspec import UNSET, UnsetType
from returns.result import Failure

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.catalogue import Catalogue
from metaharness.pure.census import ZERO_CENSUS, count_decision
from metaharness.pure.codex import app_server
from metaharness.pure.codex.app_server import Decide, Note, Perform, Send, Step, TurnCompleted, Warn
from metaharness.pure.codex.rendering import resolve_call
from metaharness.pure.codex.replay import stop_word
from metaharness.pure.codex.rollout import (
    RolloutLaunch,
    RolloutReader,
    nested_result,
    read_rollout_line,
    read_sub_agent_line,
)
from metaharness.pure.codex.rollout import session_ended as rollout_session_ended
from metaharness.pure.codex.sandbox import SandboxWatch, sandbox_denials, watched
from metaharness.pure.codex.seam import answer_body, check_replacement, denied_result, presented_call
from metaharness.pure.codex.vendor import HONOURED_COMMANDS
from metaharness.pure.commands import (
    Halt,
    Interrupt,
    Steering,
    ToolDecide,
    check_supported,
    check_well_formed,
    command_ok,
    command_refused,
)
from metaharness.pure.correlation import Correlator, Output, Present, on_hook_call, on_readings, on_stream_end
from metaharness.pure.decisions import (
    AbandonCause,
    Answer,
    Arm,
    Control,
    Desk,
    Disarm,
    PresentedCall,
    abandon,
    decide,
    pending_call,
    present,
)
from metaharness.pure.decisions import Emit as DeskEmit
from metaharness.pure.decisions import expire as desk_expire
from metaharness.pure.doorbell import UnreadKeys, unread_key
from metaharness.pure.events import (
    Census,
    Deny,
    Event,
    EventValue,
    Process,
    Replace,
    SessionStarted,
    Stream,
    ToolDecided,
    ToolResult,
    TurnEnded,
    WarningRaised,
    closing_marker,
    note,
    result_unobserved,
)
from metaharness.pure.hook_channel import CHANNEL_REFUSED_REASON, HOOK_GAVE_UP, HookAnswer, HookCall, read_hook_request
from metaharness.pure.readings import Emitted, Finished, Reading
from metaharness.pure.run_stages import closing_reason, no_terminal_record
from metaharness.pure.session_steps import SessionSteps
from metaharness.pure.stop import GROUP_POLICY
from metaharness.pure.subjects import TreeFacts, resolve_subjects

ADAPTER = "codex"

STOP_POLICY = GROUP_POLICY
"""Every stop is SIGTERM to the group, SIGKILL 5 s later (or at a second signal)."""


class _Abandon(msgspec.Struct, frozen=True):
    """Abandon every pending call now (a turn ended among the outputs before it)."""

    why: AbandonCause


Effect: TypeAlias = EventValue | HookAnswer | Perform | Send | Note | Arm | Disarm
Item: TypeAlias = DeskEmit | Answer | Arm | Disarm | Emitted | Present | _Abandon | Step
"""What the session works through in order: desk effects, what the correlator released, the
app-server conversation's steps."""


class Catalogued(msgspec.Struct, frozen=True, kw_only=True):
    """A catalogue run's part of the session: the conversation, the calls it asked to decide (seam
    ``owned_tool``), whether the catalogue server has ended and whether the turn is over."""

    catalogue: Catalogue
    conversation: app_server.Session
    owned: Map[str, bool] = Map()
    catalogue_gone: bool = False
    turn_completed: bool = False


class Session(msgspec.Struct, frozen=True, kw_only=True):
    """One codex run's state between inputs. ``keys`` maps a call to the hook key that delivered it,
    ``names`` a call to its tool; ``unanswered`` are the calls whose hook had gone when answered,
    ``refused`` those whose answer met a refused channel name; ``sandbox`` the calls codex's own sandbox
    refused so far; ``unread`` the rung keys that named no request; ``tree`` is what the shell found of the links the calls' subjects pass through."""

    stream: Stream
    desk: Desk
    reader: RolloutReader
    sub_readers: Map[str, RolloutReader] = Map()
    correlator: Correlator = Correlator(live=True)
    census: Census = ZERO_CENSUS
    keys: Map[str, str] = Map()
    names: Map[str, str] = Map()
    unanswered: Map[str, bool] = Map()
    refused: Map[str, bool] = Map()
    session_cwd: str | None = None
    sandbox: SandboxWatch = SandboxWatch()
    unread: UnreadKeys = UnreadKeys()
    tree: TreeFacts
    catalogued: Catalogued | None = None
    queued: tuple[Item, ...] = ()
    suspended: HookAnswer | Perform | None = None

    @property
    def finished(self) -> bool:
        """On a catalogue run: the turn completed or the conversation failed, so the server is ended."""
        part = self.catalogued
        return part is not None and (part.turn_completed or part.conversation.phase == "failed")


def open_session(
    desk: Desk, rollout: RolloutLaunch, run: str, tree: TreeFacts, catalogue: Catalogue | None = None,
    conversation: app_server.Session | None = None, opening: tuple[Step, ...] = (),
) -> tuple[Session, tuple[Effect, ...]]:  # fmt: skip
    """A run's session over the child's ``tree`` (its real working directory, no links looked at yet);
    on a catalogue run the conversation and its ``opening`` steps (``initialize``)."""
    catalogued = None
    if catalogue is not None and conversation is not None:
        catalogued = Catalogued(catalogue=catalogue, conversation=conversation)
    session = Session(
        stream=Stream(run), desk=desk, reader=RolloutReader(launch=rollout), tree=tree, catalogued=catalogued
    )
    return _work(session, opening)


def _write(session: Session, payload: Event, at: str | UnsetType = UNSET) -> tuple[Session, EventValue]:
    """Note one event: a denied call's result is an error, ``session.started`` gives the session's
    directory, and ``tool.decided`` is counted (a deny by ``deadline`` when its hook had gone)."""
    if isinstance(payload, ToolResult):
        payload = denied_result(session.desk, payload)
    session_cwd = payload.cwd if isinstance(payload, SessionStarted) else session.session_cwd
    census, unanswered = session.census, session.unanswered
    if isinstance(payload, ToolDecided):
        if payload.call_id in session.refused:
            payload = msgspec.structs.replace(payload, decision=Deny(CHANNEL_REFUSED_REASON), decided_by="adapter")
        elif payload.call_id in unanswered:
            unanswered = unanswered.delete(payload.call_id)
            payload = msgspec.structs.replace(payload, decision=Deny(HOOK_GAVE_UP), decided_by="deadline")
        census = count_decision(census, payload)
    stream, line = note(session.stream, payload, at)
    sandbox = watched(session.sandbox, session.reader.grant, payload)
    session = msgspec.structs.replace(
        session, stream=stream, census=census, unanswered=unanswered, session_cwd=session_cwd, sandbox=sandbox
    )
    return session, line


def _present(session: Session, call: HookCall) -> tuple[Session, tuple[Item, ...]]:
    """A delivered call to the decision desk: on seam ``owned_tool`` when the app-server asked for it,
    else on seam ``hook``."""
    session = msgspec.structs.replace(session, names=session.names.set(call.call_id, call.name))
    part = session.catalogued
    tree = session.tree
    if part is not None and call.call_id in part.owned:
        presented = app_server.presented_tool_call(part.catalogue, call.call_id, call.name, call.input)
        presented = msgspec.structs.replace(presented, subjects=resolve_subjects(presented.subjects, tree.cwd, tree.links))
    else:
        presented = presented_call(call, tree, session.session_cwd)
    desk, effects = present(session.desk, presented)
    return msgspec.structs.replace(session, desk=desk), effects


def _replacement(session: Session, command: ToolDecide) -> PresentedCall | None:
    """A ``replace``'s input read as the pending call would be (docs/decisions.md#admission), for the desk's check."""
    pending = pending_call(session.desk, command.call_id)
    if not isinstance(command.decision, Replace) or pending is None:
        return None
    part, tree, input = session.catalogued, session.tree, command.decision.input
    if part is not None and command.call_id in part.owned:
        replaced = app_server.presented_tool_call(part.catalogue, command.call_id, pending.name, input)
        operations, subjects = replaced.operations, replaced.subjects
    else:
        operations, subjects = resolve_call(pending.name, input)
    subjects = resolve_subjects(subjects, tree.cwd, tree.links)
    return msgspec.structs.replace(pending, input=input, operations=operations, subjects=subjects)


def _answer(session: Session, answer: Answer) -> tuple[Session, tuple[Item, ...], HookAnswer | None]:
    """A decision to hand back: through the conversation for a call the app-server asked for, else to
    the hook that delivered the call (none when no hook did)."""
    part = session.catalogued
    if part is not None and answer.call_id in part.owned:
        conversation, steps = app_server.answer_decision(part.conversation, answer.call_id, answer.decision)
        session = msgspec.structs.replace(session, catalogued=msgspec.structs.replace(part, conversation=conversation))
        return session, steps, None
    key = session.keys.get(answer.call_id)
    return session, (), None if key is None else HookAnswer(answer.call_id, key, answer_body(answer.decision))


def _step(session: Session, step: Step) -> tuple[Session, tuple[Item, ...], Effect | None]:
    """One step of the conversation: what follows it in the walk and the effect it is, if any."""
    part = session.catalogued
    assert part is not None
    if isinstance(step, Decide):
        session = msgspec.structs.replace(
            session, catalogued=msgspec.structs.replace(part, owned=part.owned.set(step.call_id, True))
        )
        call = HookCall(key="", call_id=step.call_id, name=step.tool, input=step.arguments, correlated=True)
        correlator, outputs = on_hook_call(session.correlator, call)
        return msgspec.structs.replace(session, correlator=correlator), _released(outputs), None
    if isinstance(step, Warn):
        return session, (DeskEmit(step.warning),), None
    if isinstance(step, TurnCompleted):
        return msgspec.structs.replace(session, catalogued=msgspec.structs.replace(part, turn_completed=True)), (), None
    if isinstance(step, Perform) and part.catalogue_gone:
        return _catalogue_gone(session)
    return session, (), step


def _catalogue_gone(session: Session) -> tuple[Session, tuple[Item, ...], None]:
    part = session.catalogued
    assert part is not None
    conversation, steps = app_server.catalogue_server_gone(part.conversation)
    part = msgspec.structs.replace(part, conversation=conversation, catalogue_gone=True)
    return msgspec.structs.replace(session, catalogued=part), steps, None


def _released(outputs: tuple[Output, ...]) -> tuple[Item, ...]:
    """What the correlator released, and every pending call abandoned after a turn that ended."""
    ended = any(isinstance(o, Emitted) and isinstance(o.payload, TurnEnded) for o in outputs)
    return (*outputs, _Abandon("the turn ended")) if ended else outputs


def _work(session: Session, items: tuple[Item, ...]) -> tuple[Session, tuple[Effect, ...]]:
    """Work through ``items`` in order, each item's own follow-ups first; a hook answer or a call
    performed stops the walk until :func:`delivered` resumes it, so every event is noted in the order
    it is written."""
    out: list[Effect] = []
    pending = list(items)
    while pending:
        item = pending.pop(0)
        follow: tuple[Item, ...] = ()
        effect: Effect | None = None
        if isinstance(item, DeskEmit):
            session, effect = _write(session, item.event)
        elif isinstance(item, Emitted):
            session, effect = _write(session, item.payload, item.at)
        elif isinstance(item, Present):
            session, follow = _present(session, item.call)
        elif isinstance(item, _Abandon):
            desk, follow = abandon(session.desk, item.why)
            session = msgspec.structs.replace(session, desk=desk)
        elif isinstance(item, Answer):
            session, follow, effect = _answer(session, item)
        elif isinstance(item, Arm | Disarm):
            effect = item
        else:
            session, follow, effect = _step(session, item)
        if isinstance(effect, HookAnswer | Perform):
            out.append(effect)
            queued = (*follow, *pending)
            return msgspec.structs.replace(session, queued=queued, suspended=effect), tuple(out)
        if effect is not None:
            out.append(effect)
        pending[:0] = follow
    return session, tuple(out)


def delivered(
    session: Session, written: bool, refused: WarningRaised | None = None
) -> tuple[Session, tuple[Effect, ...]]:
    """The suspended hook answer or performed call was written (``written``: a hook was still waiting,
    the catalogue server took the line). A lost hook answer makes the call's ``tool.decided`` a deny by
    ``deadline``; one that met a refused channel name (``refused``, its ``CHANNEL_REFUSED``) a deny by
    ``adapter`` after that warning (docs/adapters/common.md#child-trees); a line the catalogue server did
    not take means it has ended, and every call sent to it is answered as a failure."""
    suspended, queued = session.suspended, session.queued
    session = msgspec.structs.replace(session, queued=(), suspended=None)
    if refused is not None and isinstance(suspended, HookAnswer):
        session = msgspec.structs.replace(session, refused=session.refused.set(suspended.call_id, True))
        queued = (DeskEmit(refused), *queued)
    elif not written and isinstance(suspended, HookAnswer):
        session = msgspec.structs.replace(session, unanswered=session.unanswered.set(suspended.call_id, True))
    if not written and isinstance(suspended, Perform):
        session, steps, _ = _catalogue_gone(session)
        queued = (*steps, *queued)
    return _work(session, queued)


def request_subjects(key: str, raw: bytes) -> tuple[str, ...]:
    """The subjects a hook request's call names as spelled, so the shell can look up their links."""
    call = read_hook_request(key, raw)
    return resolve_call(call.name, call.input)[1]


def server_line_subjects(session: Session, line: bytes) -> tuple[str, ...]:
    """The subjects an ``item/tool/call`` on this line of the app-server's names as spelled (none for
    any other line), so the shell can look up their links."""
    part = session.catalogued
    try:
        message = decode_bounded(line)
    except msgspec.DecodeError:
        return ()
    if part is None or not isinstance(message, dict) or message.get("method") != "item/tool/call":
        return ()
    params = message.get("params")
    if not isinstance(params, dict):
        return ()
    tool = params.get("tool")
    if not isinstance(tool, str):
        return ()
    return app_server.presented_tool_call(part.catalogue, "", tool, params.get("arguments")).subjects


def _looked_at(session: Session, tree: TreeFacts | None) -> Session:
    return session if tree is None else msgspec.structs.replace(session, tree=session.tree.merged(tree))


def hook_request(
    session: Session, key: str, raw: bytes | None, tree: TreeFacts | None = None
) -> tuple[Session, tuple[Effect, ...]]:
    """A key the doorbell rang, with its request file's bytes (``None``: missing → ``COVERAGE_GAP``)
    and the links its subjects pass through, laid over what the session knew of the tree."""
    session = _looked_at(session, tree)
    if raw is None:
        unread, warning = unread_key(session.unread, WarningRaised(
            code="COVERAGE_GAP",
            message=f"the hook rang the doorbell with key {key} and left no request file, "
            "so that call could not be presented",
        ))  # fmt: skip
        session = msgspec.structs.replace(session, unread=unread)
        return _work(session, () if warning is None else (DeskEmit(warning),))
    call = read_hook_request(key, raw)
    correlator, outputs = on_hook_call(session.correlator, call)
    session = msgspec.structs.replace(session, keys=session.keys.set(call.call_id, key), correlator=correlator)
    return _work(session, _released(outputs))


def _readings(session: Session, readings: tuple[Reading, ...]) -> tuple[Session, tuple[Effect, ...]]:
    correlator, outputs = on_readings(session.correlator, readings)
    return _work(msgspec.structs.replace(session, correlator=correlator), _released(outputs))


def _nested(session: Session, before: RolloutReader, after: RolloutReader) -> tuple[Reading, ...]:
    """The result of each call the hook delivered whose completion the line recorded under the hook
    call's id, the rollout never having announced it (a code-mode ``exec`` host's nested call)."""
    finished: list[Reading] = []
    if after.evidence is before.evidence:  # most lines record no completion
        return ()
    for call_id in after.evidence.keys() - before.evidence.keys():
        result = nested_result(after, call_id) if call_id in session.correlator.presented else None
        if result is not None:
            finished.append(Finished(call_id, result, after.evidence[call_id].get("_at", UNSET)))
    return tuple(finished)


def named_agents(session: Session) -> frozenset[str]:
    """The sub-agents' thread ids the main rollout and the sub-agents' own name: only their rollouts are
    read (docs/adapters/codex.md#rollout-mapping)."""
    return frozenset((*session.reader.agents, *(agent for reader in session.sub_readers.values() for agent in reader.agents)))


def read_line(session: Session, number: int, raw: bytes) -> tuple[Session, tuple[Effect, ...]]:
    """One rollout line (1-based ``number``, terminator removed) through the reader and correlator."""
    reader, readings = read_rollout_line(session.reader, raw, number)
    nested = _nested(session, session.reader, reader)
    return _readings(msgspec.structs.replace(session, reader=reader), (*readings, *nested))


def read_sub_agent(session: Session, path: str, number: int, raw: bytes) -> tuple[Session, tuple[Effect, ...]]:
    """One line of the sub-agent rollout at ``path``: its calls and their results."""
    reader = session.sub_readers.get(path, RolloutReader(launch=session.reader.launch))
    before = reader
    reader, readings = read_sub_agent_line(reader, raw, number)
    nested = _nested(session, before, reader)
    sub_readers = session.sub_readers.set(path, reader)
    return _readings(msgspec.structs.replace(session, sub_readers=sub_readers), (*readings, *nested))


def read_server(session: Session, line: bytes, tree: TreeFacts | None = None) -> tuple[Session, tuple[Effect, ...]]:
    """One line the app-server wrote, through the conversation, with the links the subjects of a call
    it asks for pass through."""
    session = _looked_at(session, tree)
    part = session.catalogued
    assert part is not None
    conversation, steps = app_server.read_server_line(part.conversation, line)
    return _work(msgspec.structs.replace(session, catalogued=msgspec.structs.replace(part, conversation=conversation)), steps)


def read_catalogue_server(session: Session, line: bytes | None) -> tuple[Session, tuple[Effect, ...]]:
    """A line of the catalogue server's answers; ``None`` when it has ended, after which every call
    sent to it, and every later one, is answered as a failure."""
    part = session.catalogued
    assert part is not None
    if line is None:
        session, steps, _ = _catalogue_gone(session)
        return _work(session, steps)
    conversation, steps = app_server.read_catalogue_server_line(part.conversation, line)
    return _work(msgspec.structs.replace(session, catalogued=msgspec.structs.replace(part, conversation=conversation)), steps)


def take_command(
    session: Session, command: Steering, latency_ms: int | None
) -> tuple[Session, tuple[Effect, ...], Control]:
    """One framed ``metaharness.command/1`` in the order of docs/events.md: refused when malformed or
    not honoured; ``tool.decide`` to the desk (a ``replace`` whose input codex cannot run is refused
    ``MALFORMED`` and the call stays open); ``interrupt`` and ``halt`` abandon pending calls first,
    their denies handed to the hooks before the control the shell applies."""
    formed = check_well_formed(command).bind(lambda ok: check_supported(ok.command, ADAPTER, HONOURED_COMMANDS))
    if isinstance(formed, Failure):
        session, effects = _work(session, (DeskEmit(formed.failure()),))
        return session, effects, None
    if isinstance(command, ToolDecide):
        name = session.names.get(command.call_id) or ""
        if isinstance(command.decision, Replace) and command.call_id in session.desk.pending_call_ids():
            checked = check_replacement(name, command.decision.input)
            if isinstance(checked, Failure):
                problem = checked.failure()
                session, effects = _work(session, (DeskEmit(command_refused(command.id, problem.code, problem.message)),))
                return session, effects, None
        desk, desk_effects = decide(session.desk, command, latency_ms, _replacement(session, command))
        session, effects = _work(msgspec.structs.replace(session, desk=desk), desk_effects)
        return session, effects, None
    if not isinstance(command, Interrupt | Halt):
        return session, (), None
    control: Control = "halt" if isinstance(command, Halt) else "interrupt"
    why: AbandonCause = "the run was halted" if control == "halt" else "the run was interrupted"
    session, effects = _work(session, (_Abandon(why), DeskEmit(command_ok(command.id))))
    return session, effects, control


def expire(session: Session, call_id: str, elapsed_ms: int) -> tuple[Session, tuple[Effect, ...]]:
    """A call's deadline fired ``elapsed_ms`` after arming: deny by ``deadline``."""
    desk, effects = desk_expire(session.desk, call_id, elapsed_ms)
    return _work(msgspec.structs.replace(session, desk=desk), effects)


def abandon_pending(session: Session, why: AbandonCause) -> tuple[Session, tuple[Effect, ...]]:
    """Every pending call denied by ``adapter`` with ``PENDING_CALL_ABANDONED``."""
    return _work(session, (_Abandon(why),))


def end_of_record(session: Session) -> tuple[Session, tuple[Effect, ...]]:
    """The rollout is read to its end: the correlator's stream end, then every call still open abandoned."""
    correlator, outputs = on_stream_end(session.correlator)
    return _work(
        msgspec.structs.replace(session, correlator=correlator), (*_released(outputs), _Abandon("the stream ended"))
    )


STEPS = SessionSteps(abandon_pending=abandon_pending, expire=expire, take_command=take_command, end_of_record=end_of_record)
"""The codex session's steps every live loop takes (``metaharness.pure.session_steps``)."""


def wind_up(
    session: Session, *, stderr_tail: bytes, halted: bool, killed: bool, process: Process, late: tuple[Event, ...] = ()
) -> tuple[Session, tuple[Effect, ...], str]:
    """The closing records in order: ``session.ended`` (when a ``task_complete`` was seen, with its
    census), ``RESULT_UNOBSERVED`` for the calls that never got a result, ``NO_TERMINAL_RECORD`` (not
    after a ``halt``), the wind-up's own events, then ``stream.closed``; and its reason."""
    ended = rollout_session_ended(session.reader, session.census)
    out: list[Effect] = []
    if ended is not None:
        ended = msgspec.structs.replace(ended, permission_denials=sandbox_denials(session.sandbox))
        session, line = _write(session, ended, session.reader.last_complete_at)
        out.append(line)
    unobserved = result_unobserved(session.stream)
    extra: list[Event] = [] if unobserved is None else [unobserved]
    if ended is None and not halted:
        extra.append(no_terminal_record(stderr_tail))
    for payload in (*extra, *late):
        session, line = _write(session, payload)
        out.append(line)
    reason = closing_reason(halted=halted, killed=killed, stop=stop_word(ended), budget_stops=())
    session, line = _write(session, closing_marker(session.stream, reason, process))
    return session, (*out, line), reason
