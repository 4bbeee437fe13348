"""What metaharness adds to a run's stream as it is written, on every kind, as values before the stream's
writer numbers and encodes them (``metaharness.pure.stream_writer``; docs/confinement.md,
docs/decisions.md#the-route-witness).

A call metaharness denied whose ``tool.result`` is not an error was let through by something else
(a forged hook-channel answer): right after the later of the two events a ``warning{DECISION_BYPASSED}``
naming the call follows; the call presented again does not reset it (with another input only its earlier
success is forgotten) unless the embedder allows it again with the very input it was denied on (past the desk's
window, an asked call is asked again: docs/decisions.md#correlation-and-abandonment), and ``session.ended.census`` counts it under ``bypassed``. A run with a model
route reconciles its stream with the route witness at ``session.ended``: the witness's warnings
(``metaharness.pure.witness.reconcile``) come just before it, its bypasses counted in ``census.bypassed``, and
``session.ended.route`` carries the route's traffic with ``calls``; a live run's ``session.ended`` carries its
hermetic rows as the audit checks them (``rows``). A record event after the terminal record is one
``RECORD_FORGED``, after what the event itself brings (a denied call's success: ``DECISION_BYPASSED``). ``session.started`` names the program the run started as ``program``; a child that stopped
before ``session.started`` has its ``NO_TERMINAL_RECORD`` name the program instead. The closing reason is the
run's outcome (``metaharness.pure.run_stages.run_outcome``): when the child's exit or the route overrules the
record's ``completed``, a ``warning{RUN_FAILED}`` comes directly before ``stream.closed`` and the stream closes
``error`` (docs/events.md#stream-ending). Every other event passes as it is.
"""

from __future__ import annotations

import msgspec
from immutables import Map

from metaharness.pure.adapter import WitnessFacts
from metaharness.pure.events import (
    Allow,
    Deny,
    Event,
    EventValue,
    Opaque,
    Replace,
    RouteTraffic,
    RowCheck,
    SessionEnded,
    SessionStarted,
    StreamClosed,
    Text,
    ToolDecided,
    ToolRequested,
    ToolResult,
    TurnEnded,
    TurnStarted,
    WarningRaised,
)
from metaharness.pure.run_stages import run_failed, run_outcome
from metaharness.pure.witness import (
    WITNESS_GATING,
    Presentation,
    RouteAccount,
    StreamAccount,
    bypassed_count,
    observe_event,
    reconcile,
    unanswered_completion,
)

_CONCERNED = frozenset({ToolRequested, ToolDecided, ToolResult, SessionEnded, StreamClosed, SessionStarted, WarningRaised})
"""The events the amendment reads before the terminal record; every other one passes as it is."""
_RECORD_EVENTS = (ToolRequested, ToolResult, Text, TurnStarted, TurnEnded, SessionEnded, Opaque)
"""Events a harness's record lines map to (``tool.decided`` is metaharness's own: a call abandoned at the
end is decided after the terminal record); one after the terminal record is a forged line."""


class Amendment(msgspec.Struct, frozen=True):
    """The amender's state: the calls metaharness denied, the calls whose result was not an error, how
    many bypasses, what the stream said (for the witness), the kind's witness
    facts and whether the run decides (frame or ask), whether the terminal record was written and a
    line after it named, the route's traffic written into ``session.ended`` (for the run's outcome) and the
    program the run started (``None``: ``session.started`` is left as written)."""

    denied: Map[str, bool] = Map()
    again: Map[str, Presentation] = Map()
    """A denied call's latest presentation, once it was presented again."""
    succeeded: Map[str, bool] = Map()
    bypassed: int = 0
    stream: StreamAccount = StreamAccount()
    facts: WitnessFacts = WitnessFacts()
    deciding: bool = True
    ended: bool = False
    after_ended: bool = False
    gaps: int = 0
    """The witness's gating findings written (``metaharness.pure.witness.WITNESS_GATING``)."""
    account: RouteAccount | None = None
    """The route's account as it stood at the terminal record."""
    route: RouteTraffic | None = None
    program: str | None = None
    started: bool = False
    """Whether ``session.started`` was written naming ``program``."""


_NO_TERMINAL = "the harness stopped without a terminal record"


def unstarted_program(warning: WarningRaised, program: str) -> WarningRaised:
    """``NO_TERMINAL_RECORD`` of a child that stopped before ``session.started``, naming the program it ran
    (docs/events.md#warning-codes)."""
    rest = warning.message.removeprefix(_NO_TERMINAL)
    return msgspec.structs.replace(warning, message=f"{_NO_TERMINAL} or session.started (metaharness started {program}){rest}")


def decision_bypassed(call_id: str) -> WarningRaised:
    """The warning for a denied call whose result is not an error."""
    return WarningRaised(
        code="DECISION_BYPASSED",
        message=f"metaharness denied call {call_id}, yet its result is not an error: the decision was bypassed",
    )


def record_after_terminal() -> WarningRaised:
    """The warning for a record line after the terminal record."""
    return WarningRaised(
        code="RECORD_FORGED",
        message="the harness's record went on after its terminal record: a line was written into the record",
    )


def amend(
    state: Amendment,
    value: EventValue,
    route: RouteTraffic | None = None,
    account: RouteAccount | None = None,
    rows: tuple[RowCheck, ...] | None = None,
) -> tuple[Amendment, tuple[EventValue, ...]]:
    """The events to write for ``value``; ``route`` is a confined run's model route traffic, ``account`` the
    route witness's account whenever the run has a route (``--confine off`` too), ``rows`` the hermetic rows
    checked at ``session.ended``."""
    payload = value.payload
    if not state.ended and type(payload) not in _CONCERNED:
        return state, (value,)
    if state.ended and not state.after_ended and isinstance(payload, _RECORD_EVENTS):
        state = msgspec.structs.replace(state, after_ended=True, gaps=state.gaps + 1)
        state, values = amend(state, value, route, account, rows)
        return state, (*values, EventValue(record_after_terminal()))
    if isinstance(payload, SessionStarted) and state.program is not None:
        started = msgspec.structs.replace(payload, program=state.program)
        return msgspec.structs.replace(state, started=True), (EventValue(started, value.at),)
    unstarted = None if state.started else state.program
    if unstarted is not None and isinstance(payload, WarningRaised) and payload.code == "NO_TERMINAL_RECORD":
        return state, (EventValue(unstarted_program(payload, unstarted), value.at),)
    state = _fresh(state, payload)
    state = msgspec.structs.replace(state, stream=observe_event(state.stream, payload))
    if isinstance(payload, SessionEnded) and not state.ended:
        return _ended(msgspec.structs.replace(state, ended=True, route=route), value, payload, route, account, rows)
    call = _bypassed_call(state, payload)
    state = _noted(state, payload)
    if call is not None:
        stream = msgspec.structs.replace(state.stream, bypassed=state.stream.bypassed.set(call, True))
        state = msgspec.structs.replace(state, bypassed=state.bypassed + 1, stream=stream)
        return state, (value, EventValue(decision_bypassed(call)))
    if isinstance(payload, StreamClosed):
        return _closed(state, value, payload)
    return state, (value,)


def _closed(state: Amendment, value: EventValue, payload: StreamClosed) -> tuple[Amendment, tuple[EventValue, ...]]:
    """The closing event: after the witness's last check (a completion the route did not see the model reach)
    and ``RUN_FAILED`` when the child's exit or the route overrules the record's ``completed``, with the run's
    outcome as its reason (the writer counts the events before it)."""
    finding = None if state.account is None else unanswered_completion(state.account, payload.reason)
    outcome = run_outcome(payload.reason, payload.process, state.route)
    if finding is None and outcome.overruled is None:
        return state, (value,)
    warnings = (*(() if finding is None else (finding,)), *(() if outcome.overruled is None else (run_failed(outcome),)))
    state = msgspec.structs.replace(state, gaps=state.gaps + (finding is not None))
    closed = msgspec.structs.replace(payload, reason=outcome.reason)
    return state, (*(EventValue(warning) for warning in warnings), EventValue(closed, value.at))


def _fresh(state: Amendment, payload: Event) -> Amendment:
    """A call id presented with a different input is another call (``REQUEST_MUTATED``): its earlier success is
    forgotten, so the desk's deny of the new input is no bypass; a deny is kept for the whole stream, so a denied
    call's id re-presented with an allowed input (past the desk's window, docs/decisions.md#correlation-and-abandonment)
    cannot carry a success; the same call presented again changes nothing."""
    if not isinstance(payload, ToolRequested):
        return state
    seen = state.stream.requested.get(payload.call_id)
    if seen is None or Presentation(payload.name, payload.input) in seen:
        return state
    return msgspec.structs.replace(state, succeeded=_without(state.succeeded, payload.call_id))


def _bypassed_call(state: Amendment, payload: Event) -> str | None:
    """The call a line shows bypassed: a deny after a result that was not an error, or such a result
    after a deny; each call once."""
    if isinstance(payload, ToolDecided) and isinstance(payload.decision, Deny):
        call = payload.call_id
        return call if call in state.succeeded and call not in state.stream.bypassed else None
    if isinstance(payload, ToolResult) and payload.is_error is False:
        call = payload.call_id
        return call if call in state.denied and call not in state.stream.bypassed else None
    return None


def _noted(state: Amendment, payload: Event) -> Amendment:
    if isinstance(payload, ToolRequested) and payload.call_id in state.denied:
        return msgspec.structs.replace(state, again=state.again.set(payload.call_id, Presentation(payload.name, payload.input)))
    if isinstance(payload, ToolDecided) and isinstance(payload.decision, Deny):
        return msgspec.structs.replace(state, denied=state.denied.set(payload.call_id, True))
    if isinstance(payload, ToolDecided) and _reallowed(state, payload):
        return msgspec.structs.replace(state, denied=_without(state.denied, payload.call_id), again=state.again.delete(payload.call_id))
    if isinstance(payload, ToolResult) and payload.is_error is False:
        return msgspec.structs.replace(state, succeeded=state.succeeded.set(payload.call_id, True))
    return state


def _without(ids: Map[str, bool], call_id: str) -> Map[str, bool]:
    """``ids`` (a set kept as a persistent map, so noting a call costs the same however long the run) without
    ``call_id``."""
    return ids.delete(call_id) if call_id in ids else ids


def _reallowed(state: Amendment, decided: ToolDecided) -> bool:
    """Whether an allow lifts a denied call's deny: the embedder allowed (or replaced) the call presented again
    with the very input every deny of the id answered, so what runs now is what the operator decided. A frame's
    allow does not (a child can change what a subject resolves to), nor an allow of another input (a flood
    laundering a denied id through a benign input past the desk's window)."""
    presented = state.again.get(decided.call_id)
    if not isinstance(decided.decision, Allow | Replace) or decided.decided_by != "embedder" or presented is None:
        return False
    denials = state.stream.denied.get(decided.call_id)
    return denials is not None and denials.all_answered(presented)


def _ended(state: Amendment, value: EventValue, payload: SessionEnded, route: RouteTraffic | None,
           account: RouteAccount | None, rows: tuple[RowCheck, ...] | None) -> tuple[Amendment, tuple[EventValue, ...]]:  # fmt: skip
    """The terminal record: the witness's warnings before it, then it with the census and the route."""
    warnings: tuple[WarningRaised, ...] = ()
    if account is not None:
        state = msgspec.structs.replace(state, account=account)
        warnings, calls = reconcile(account, state.stream, payload, state.facts, state.deciding)
        route = None if route is None else msgspec.structs.replace(route, calls=calls)
    bypassed = state.bypassed + bypassed_count(warnings)
    if not warnings and not bypassed and route is None and rows is None:
        return state, (value,)
    gaps = state.gaps + sum(1 for warning in warnings if warning.code in WITNESS_GATING)
    state = msgspec.structs.replace(state, bypassed=bypassed, gaps=gaps)
    census = payload.census if not bypassed else msgspec.structs.replace(payload.census, bypassed=bypassed)
    ended = msgspec.structs.replace(payload, census=census, route=route if route is not None else payload.route,
                                    rows=rows if rows is not None else payload.rows)  # fmt: skip
    return state, (*(EventValue(warning) for warning in warnings), EventValue(ended, value.at))
