"""A live gemini run as a pure state machine: the stream-json record, the hook channel, the decision desk and
the stream folded together (docs/adapters/gemini.md#seam, #correlation; docs/adapters/common.md#vendor-decisions).

Each input returns the new ``Session`` and the effects the shell performs **in order**:

* :class:`~metaharness.pure.events.EventValue` — one event for the run's stream writer;
* :class:`HookAnswer` — write ``body`` to ``key`` through the hook channel, then call :func:`answered` with
  whether the hook was still waiting; the effects after it arrive from there;
* ``Arm``/``Disarm`` (``metaharness.pure.decisions``) — start or stop a call's deadline timer.

Gemini CLI's BeforeTool input carries no call id, so a hook call is matched to the record's ``tool_use`` by
tool name and canonical input, oldest first, whichever arrives first: a hook call that finds its
announcement takes the record's ``tool_id``; one that finds none is presented at once as ``hook:<key>``
and the record's later announcement (and result) are read under that id.
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec
from immutables import Map
from msgspec import UNSET, UnsetType

from metaharness.pure.budgets import HOOK_TIMEOUT_S
from metaharness.pure.census import ZERO_CENSUS, counted
from metaharness.pure.commands import Steering
from metaharness.pure.correlation import Correlator, Present, on_hook_call, on_readings, on_stream_end
from metaharness.pure.decisions import (
    Answer,
    Arm,
    Control,
    Desk,
    Disarm,
    PresentedCall,
    open_desk,
    present,
    steer,
)
from metaharness.pure.decisions import Emit as DeskEmit
from metaharness.pure.doorbell import UnreadKeys, unread_key
from metaharness.pure.events import (
    Census,
    Deny,
    Event,
    EventValue,
    Process,
    SessionEnded,
    Stream,
    ToolDecided,
    ToolResult,
    WarningRaised,
    closing_marker,
    note,
    result_unobserved,
)
from metaharness.pure.frames import Frame
from metaharness.pure.gemini.adapter import HONOURED_COMMANDS
from metaharness.pure.gemini.hook import gemini_hook_answer
from metaharness.pure.gemini.record import RecordFacts, RecordState, canonical_input, read_record_line
from metaharness.pure.gemini.rendering import resolve_gemini_call
from metaharness.pure.hook_channel import (
    CHANNEL_REFUSED_REASON,
    HOOK_GAVE_UP,
    HookAnswer,
    HookCall,
    read_hook_request,
    request_unreadable,
)
from metaharness.pure.modes import DecisionMode
from metaharness.pure.readings import Announced, Emitted, Finished, Reading
from metaharness.pure.run_stages import closing_reason, no_terminal_record
from metaharness.pure.session_steps import desk_steps
from metaharness.pure.stop import GROUP_POLICY
from metaharness.pure.subjects import TreeFacts, resolve_subjects

ADAPTER = "gemini"
STOP_POLICY = GROUP_POLICY
"""Every stop is SIGTERM to the group, SIGKILL 5 s later (or at a second signal)."""

Key: TypeAlias = tuple[str, bytes]
"""A call's tool name and canonical input, which an announcement and a hook call are matched on."""


class _Waiting(msgspec.Struct, frozen=True):
    """The call ids of one key not claimed yet, numbered from ``first`` (the oldest) to ``end``."""

    first: int
    end: int
    ids: Map[int, str]


Claims: TypeAlias = Map[Key, _Waiting]
"""What waits to be claimed, by key: the oldest of a key is claimed first, at a cost that does not grow with how
many wait (docs/DEVELOPING.md#rules-for-pure)."""


Effect: TypeAlias = EventValue | HookAnswer | Arm | Disarm
Item: TypeAlias = DeskEmit | Answer | Arm | Disarm | Emitted | Present


class Session(msgspec.Struct, frozen=True, kw_only=True):
    """One gemini run's state between inputs: the record announcements no hook has claimed yet
    (``announced``), the hook calls presented before their announcement (``hooked``), the record ids read
    under a hook call's id (``aliases``), the key waiting for each call's answer (its first hook's), the rung keys that named no request
    (``unread``)."""

    facts: RecordFacts
    stream: Stream
    desk: Desk
    record: RecordState = RecordState()
    correlator: Correlator = Correlator(live=True)
    census: Census = ZERO_CENSUS
    announced: Claims = Map()
    hooked: Claims = Map()
    aliases: Map[str, str] = Map()
    waiting: Map[str, str] = Map()
    queued: tuple[Item, ...] = ()
    answering: str | None = None
    ended: SessionEnded | None = None
    tree: TreeFacts | None = None
    unread: UnreadKeys = UnreadKeys()


def open_session(facts: RecordFacts, run: str, mode: DecisionMode, frame: Frame | None,
                 hook_timeout_s: int = HOOK_TIMEOUT_S, *, live: bool = True) -> Session:  # fmt: skip
    """A run's session; the desk's deadline is measured against the hook's timeout."""
    return Session(facts=facts, stream=Stream(run), desk=open_desk(mode, frame, hook_timeout_s * 1000),
                   correlator=Correlator(live=live))  # fmt: skip


def with_version(session: Session, version: str | None) -> Session:
    """The session once the ``--version`` probe run beside the spawn has answered: ``session.started`` states
    ``version`` (docs/adapters/gemini.md#version-probe)."""
    return msgspec.structs.replace(session, facts=msgspec.structs.replace(session.facts, harness_version=version))


def _write(session: Session, payload: Event, at: str | UnsetType = UNSET) -> tuple[Session, EventValue]:
    """Note one event; ``tool.decided`` is counted and ``session.ended`` gets the census so far. A result is the
    record's own (Gemini CLI states a blocked call's ``status:"error"``)."""
    census, ended, payload = counted(session.census, session.ended, payload)
    stream, line = note(session.stream, payload, at)
    return msgspec.structs.replace(session, stream=stream, census=census, ended=ended), line


def _emit_all(session: Session, items: tuple[Item, ...]) -> tuple[Session, tuple[Effect, ...]]:
    """Work through ``items`` in order; a hook answer stops the walk until :func:`answered` resumes it."""
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
            key = session.waiting.get(item.call_id)
            if key is None:
                continue
            session = msgspec.structs.replace(
                session, waiting=session.waiting.delete(item.call_id),
                queued=tuple(pending), answering=item.call_id,
            )  # fmt: skip
            out.append(HookAnswer(item.call_id, key, gemini_hook_answer(item.decision)))
            return session, tuple(out)
        else:
            out.append(item)
    return session, tuple(out)


def answered(
    session: Session, delivered: bool, refused: WarningRaised | None = None
) -> tuple[Session, tuple[Effect, ...]]:
    """The hook answer was written; when no hook was still waiting, the call's ``tool.decided`` becomes a deny
    by ``deadline`` saying the hook gave up first; when the answer met a refused channel name (``refused``, its
    ``CHANNEL_REFUSED``, written first) a deny by ``adapter`` saying so (docs/adapters/common.md#child-trees)."""
    deny, by = (Deny(CHANNEL_REFUSED_REASON), "adapter") if refused is not None else (Deny(HOOK_GAVE_UP), "deadline")
    queued = [
        DeskEmit(msgspec.structs.replace(item.event, decision=deny, decided_by=by))
        if (refused is not None or not delivered) and isinstance(item, DeskEmit) and isinstance(item.event, ToolDecided)
        and item.event.call_id == session.answering else item
        for item in session.queued
    ]  # fmt: skip
    warnings = () if refused is None else (DeskEmit(refused),)
    return _emit_all(msgspec.structs.replace(session, queued=(), answering=None), (*warnings, *queued))


def _present(session: Session, call: HookCall) -> tuple[Session, tuple[DeskEmit | Answer | Arm | Disarm, ...]]:
    """Hand a hook call to the decision desk on seam ``hook``; its key waits for the answer."""
    operations, subjects = resolve_gemini_call(call.name, call.input, session.facts.cwd)
    if session.tree is not None:
        subjects = resolve_subjects(subjects, session.tree.cwd, session.tree.links)
    presented = PresentedCall(call_id=call.call_id, name=call.name, input=call.input, seam="hook",
                              operations=operations, subjects=subjects, unreadable=request_unreadable(call))
    waiting = session.waiting if call.call_id in session.waiting else session.waiting.set(call.call_id, call.key)
    session = msgspec.structs.replace(session, waiting=waiting)
    desk, effects = present(session.desk, presented)
    return msgspec.structs.replace(session, desk=desk), effects


def _claim(claims: Claims, name: str, input_key: bytes) -> tuple[str | None, Claims]:
    """The oldest call id waiting with this tool name and canonical input, and what waits then."""
    key = (name, input_key)
    waiting = claims.get(key)
    if waiting is None:
        return None, claims
    call_id = waiting.ids[waiting.first]
    if waiting.first + 1 == waiting.end:
        return call_id, claims.delete(key)
    return call_id, claims.set(key, _Waiting(waiting.first + 1, waiting.end, waiting.ids.delete(waiting.first)))


def _queued(claims: Claims, key: Key, call_id: str) -> Claims:
    """``claims`` with ``call_id`` waiting last under ``key``."""
    waiting = claims.get(key, _Waiting(0, 0, Map()))
    return claims.set(key, _Waiting(waiting.first, waiting.end + 1, waiting.ids.set(waiting.end, call_id)))


def _renamed(reading: Reading, call_id: str) -> Reading:
    if isinstance(reading, Announced):
        return Announced(call_id, msgspec.structs.replace(reading.requested, call_id=call_id), reading.at)
    if isinstance(reading, Finished):
        result: ToolResult = msgspec.structs.replace(reading.result, call_id=call_id)
        return Finished(call_id, result, reading.at, reading.warning)
    return reading


def _correlated(session: Session, reading: Reading) -> tuple[Session, Reading]:
    """A record reading under the id correlation gives it: an announcement a hook call already claimed is read
    under the hook call's id (and so is its result); any other is remembered for a hook call to claim."""
    if isinstance(reading, Announced):
        requested = reading.requested
        claimed, hooked = _claim(session.hooked, requested.name, canonical_input(requested.input))
        if claimed is None:
            announced = _queued(session.announced, (requested.name, canonical_input(requested.input)), reading.call_id)
            return msgspec.structs.replace(session, announced=announced), reading
        aliases = session.aliases if reading.call_id in session.aliases else session.aliases.set(reading.call_id, claimed)
        return msgspec.structs.replace(session, hooked=hooked, aliases=aliases), _renamed(reading, claimed)
    if isinstance(reading, Finished):
        alias = session.aliases.get(reading.call_id)
        return session, reading if alias is None else _renamed(reading, alias)
    return session, reading


def read_line(session: Session, number: int, raw: bytes) -> tuple[Session, tuple[Effect, ...]]:
    """One stream-json line (1-based ``number``, terminator removed) through the reader, correlation and the
    correlator; the terminal record first releases every held call by path (b)."""
    record, readings = read_record_line(session.record, raw, number, session.facts)
    session = msgspec.structs.replace(session, record=record)
    correlator = session.correlator
    released: list[Item] = []
    for reading in readings:
        session, reading = _correlated(session, reading)
        if isinstance(reading, Emitted) and isinstance(reading.payload, SessionEnded):
            correlator, outputs = on_stream_end(correlator)
            released += outputs
        correlator, outputs = on_readings(correlator, (reading,))
        released += outputs
    return _emit_all(msgspec.structs.replace(session, correlator=correlator), tuple(released))


def request_subjects(session: Session, key: str, raw: bytes) -> tuple[str, ...]:
    """The subjects a hook request's call names as spelled, so the shell can look up their links."""
    call = read_hook_request(key, raw)
    return resolve_gemini_call(call.name, call.input, session.facts.cwd)[1]


def _hook_call(session: Session, key: str, raw: bytes) -> tuple[Session, HookCall]:
    """The hook request as a call: under the record's id when an announcement is waiting for it, else under
    ``hook:<key>``, remembered for the announcement to come."""
    call = read_hook_request(key, raw)
    input_key = canonical_input(call.input)
    claimed, announced = _claim(session.announced, call.name, input_key)
    if claimed is not None:
        return msgspec.structs.replace(session, announced=announced), msgspec.structs.replace(call, call_id=claimed)
    if not call.name:
        return session, call
    return msgspec.structs.replace(session, hooked=_queued(session.hooked, (call.name, input_key), call.call_id)), call


def hook_request(session: Session, key: str, raw: bytes | None, tree: TreeFacts | None = None) -> tuple[Session, tuple[Effect, ...]]:
    """A key the doorbell rang, with its request file's bytes (``None``: missing → ``COVERAGE_GAP``) and the
    links its subjects pass through."""
    if tree is not None:
        session = msgspec.structs.replace(session, tree=tree if session.tree is None else session.tree.merged(tree))
    if raw is None:
        unread, warning = unread_key(session.unread, WarningRaised(
            code="COVERAGE_GAP",
            message=f"the hook channel rang for {key} but its request file is missing, so no call could be read",
        ))  # fmt: skip
        session = msgspec.structs.replace(session, unread=unread)
        if warning is None:
            return session, ()
        session, line = _write(session, warning)
        return session, (line,)
    session, call = _hook_call(session, key, raw)
    correlator, outputs = on_hook_call(session.correlator, call)
    return _emit_all(msgspec.structs.replace(session, correlator=correlator), outputs)


def take_command(session: Session, command: Steering, latency_ms: int | None) -> tuple[Session, tuple[Effect, ...], Control]:
    """One framed ``metaharness.command/1`` (docs/events.md#commands): ``tool.decide`` goes to the desk;
    ``interrupt`` and ``halt`` abandon pending calls first."""
    desk, desk_effects, control = steer(session.desk, command, latency_ms, ADAPTER, HONOURED_COMMANDS)
    session, effects = _emit_all(msgspec.structs.replace(session, desk=desk), desk_effects)
    return session, effects, control


STEPS = desk_steps(_emit_all, take_command)
"""The gemini session's steps every live loop takes (``metaharness.pure.session_steps``)."""


def terminal_stop(ended: SessionEnded | None) -> str | None:
    """The terminal record's stop word: ``completed`` for status ``success``, else ``error``; ``None`` with no
    ``result``."""
    if ended is None:
        return None
    return "completed" if ended.is_error is False else "error"


def wind_up(session: Session, *, stderr_tail: bytes = b"", halted: bool = False, killed: bool = False,
            process: Process, late: tuple[Event, ...] = ()) -> tuple[Session, tuple[Effect, ...], str]:  # fmt: skip
    """Close the stream after the end of the record (``STEPS.end_of_record``): ``RESULT_UNOBSERVED``, ``NO_TERMINAL_RECORD`` when no
    ``result`` was read (not after a ``halt``), the wind-up's own events, then ``stream.closed``; and its reason."""
    unobserved = result_unobserved(session.stream)
    extra: list[Item] = [] if unobserved is None else [DeskEmit(unobserved)]
    if session.ended is None and not halted:
        extra.append(DeskEmit(no_terminal_record(stderr_tail)))
    extra += [DeskEmit(event) for event in late]
    session, more = _emit_all(session, tuple(extra))
    reason = closing_reason(halted=halted, killed=killed, stop=terminal_stop(session.ended), budget_stops=frozenset())
    stream, line = note(session.stream, closing_marker(session.stream, reason, process))
    return msgspec.structs.replace(session, stream=stream), (*more, line), reason
