"""What metaharness adds to a run's stream as it is written, on every kind (docs/confinement.md,
docs/decisions.md#the-route-witness).

A call metaharness denied whose ``tool.result`` is not an error was let through by something else
(a forged hook-channel answer): right after the later of the two lines a ``warning{DECISION_BYPASSED}``
naming the call is written; the same call presented again does not reset it (a call id presented with
another input starts afresh),
later lines are renumbered, ``session.ended.census`` counts it under ``bypassed``
and ``stream.closed.events`` counts the added lines. A run with a model route reconciles its stream with
the route witness at ``session.ended``: the witness's warnings (``metaharness.pure.witness.reconcile``)
are written just before it, its bypasses counted in ``census.bypassed``, and ``session.ended.route``
carries the route's traffic with ``calls``; a live run's ``session.ended`` carries its hermetic rows as the
audit checks them (``rows``). A record event after the terminal record is one ``RECORD_FORGED``.
``session.started`` names the program the run started as ``program``; a child that stopped before
``session.started`` has its ``NO_TERMINAL_RECORD`` name the program instead. The closing reason is the run's outcome
(``metaharness.pure.run_stages.run_outcome``): when the child's exit or the route overrules the record's
``completed``, a ``warning{RUN_FAILED}`` comes directly before ``stream.closed`` and the stream closes ``error``
(docs/events.md#stream-ending). Lines nothing concerns pass through byte for byte.
"""

from __future__ import annotations

import msgspec
from returns.result import Failure

from metaharness.pure.adapter import WitnessFacts
from metaharness.pure.events import (
    Deny,
    Event,
    RouteTraffic,
    RowCheck,
    SessionEnded,
    SessionStarted,
    StreamClosed,
    ToolDecided,
    ToolRequested,
    ToolResult,
    WarningRaised,
    encode_event,
    read_event,
)
from metaharness.pure.run_stages import run_failed, run_outcome
from metaharness.pure.witness import (
    WITNESS_GATING,
    RouteAccount,
    StreamAccount,
    bypassed_count,
    observe_event,
    reconcile,
    unanswered_completion,
)

_CONCERNED = (b'"event":"tool.requested"', b'"event":"tool.decided"', b'"event":"tool.result"', b'"event":"session.ended"',
              b'"event":"stream.closed"', b'"event":"session.started"', b'"code":"NO_TERMINAL_RECORD"')  # fmt: skip
_RECORD_EVENTS = (b'"event":"tool.requested"', b'"event":"tool.result"', b'"event":"text"', b'"event":"turn.',
                  b'"event":"session.ended"', b'"event":"opaque"')  # fmt: skip
"""Events a harness's record lines map to (``tool.decided`` is metaharness's own: a call abandoned at the
end is decided after the terminal record); one after the terminal record is a forged line."""


class Amendment(msgspec.Struct, frozen=True):
    """The amender's state: the calls metaharness denied, the calls whose result was not an error, how
    many lines it added, how many bypasses, what the stream said (for the witness), the kind's witness
    facts and whether the run decides (frame or ask), whether the terminal record was written and a
    line after it named, the route's traffic written into ``session.ended`` (for the run's outcome) and the
    program the run started (``None``: ``session.started`` is left as written)."""

    denied: frozenset[str] = frozenset()
    succeeded: frozenset[str] = frozenset()
    added: int = 0
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
    line: bytes,
    route: RouteTraffic | None = None,
    account: RouteAccount | None = None,
    rows: tuple[RowCheck, ...] | None = None,
) -> tuple[Amendment, tuple[bytes, ...]]:
    """The lines to write for ``line``; ``route`` is a confined run's model route traffic, ``account`` the
    route witness's account whenever the run has a route (``--confine off`` too), ``rows`` the hermetic rows
    checked at ``session.ended``."""
    concerned = any(marker in line for marker in _CONCERNED) or (state.ended and any(m in line for m in _RECORD_EVENTS))
    if state.added == 0 and not concerned:
        return state, (line,)
    read = read_event(line)
    if isinstance(read, Failure):
        return state, (line,)
    event = read.unwrap()
    payload = event.payload
    seq = event.seq + state.added
    if state.ended and not state.after_ended and any(marker in line for marker in _RECORD_EVENTS):
        warning = encode_event(seq + 1, event.run, record_after_terminal())
        renumbered = line if state.added == 0 else encode_event(seq, event.run, payload, event.at)
        state = msgspec.structs.replace(state, added=state.added + 1, after_ended=True, gaps=state.gaps + 1)
        return state, (renumbered, warning)
    if isinstance(payload, SessionStarted) and state.program is not None:
        started = msgspec.structs.replace(payload, program=state.program)
        return msgspec.structs.replace(state, started=True), (encode_event(seq, event.run, started, event.at),)
    unstarted = None if state.started else state.program
    if unstarted is not None and isinstance(payload, WarningRaised) and payload.code == "NO_TERMINAL_RECORD":
        return state, (encode_event(seq, event.run, unstarted_program(payload, unstarted), event.at),)
    state = _fresh(state, payload)
    state = msgspec.structs.replace(state, stream=observe_event(state.stream, payload))
    if isinstance(payload, SessionEnded) and not state.ended:
        return _ended(msgspec.structs.replace(state, ended=True, route=route), line, payload, route, account, rows)
    call = _bypassed_call(state, payload)
    state = _noted(state, payload)
    if call is not None:
        renumbered = line if state.added == 0 else encode_event(seq, event.run, payload, event.at)
        warning = encode_event(seq + 1, event.run, decision_bypassed(call))
        stream = msgspec.structs.replace(state.stream, bypassed=state.stream.bypassed | {call})
        state = msgspec.structs.replace(state, added=state.added + 1, bypassed=state.bypassed + 1, stream=stream)
        return state, (renumbered, warning)
    if isinstance(payload, StreamClosed):
        return _closed(state, line, payload)
    if state.added == 0:
        return state, (line,)
    return state, (encode_event(seq, event.run, payload, event.at),)


def _closed(state: Amendment, line: bytes, payload: StreamClosed) -> tuple[Amendment, tuple[bytes, ...]]:
    """The closing line, counting the added lines: after the witness's last check (a completion the route
    did not see the model reach) and ``RUN_FAILED`` when the child's exit or the route overrules the
    record's ``completed``, with the run's outcome as its reason."""
    event = read_event(line).unwrap()
    finding = None if state.account is None else unanswered_completion(state.account, payload.reason)
    outcome = run_outcome(payload.reason, payload.process, state.route)
    if finding is None and outcome.overruled is None and state.added == 0:
        return state, (line,)
    warnings = (*(() if finding is None else (finding,)), *(() if outcome.overruled is None else (run_failed(outcome),)))
    seq = event.seq + state.added
    lines = tuple(encode_event(seq + offset, event.run, warning) for offset, warning in enumerate(warnings))
    gaps = state.gaps + (finding is not None)
    state = msgspec.structs.replace(state, added=state.added + len(lines), gaps=gaps)
    closed = msgspec.structs.replace(payload, events=payload.events + state.added, reason=outcome.reason)
    return state, (*lines, encode_event(seq + len(lines), event.run, closed, event.at))


def _fresh(state: Amendment, payload: Event) -> Amendment:
    """A call id presented with a different input is another call (``REQUEST_MUTATED``) and starts afresh;
    the same call presented again changes nothing."""
    if not isinstance(payload, ToolRequested):
        return state
    seen = state.stream.requested.get(payload.call_id, ())
    if not seen or (payload.name, payload.input) in seen:
        return state
    fresh = {payload.call_id}
    return msgspec.structs.replace(state, denied=state.denied - fresh, succeeded=state.succeeded - fresh)


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
    if isinstance(payload, ToolDecided) and isinstance(payload.decision, Deny):
        return msgspec.structs.replace(state, denied=state.denied | {payload.call_id})
    if isinstance(payload, ToolResult) and payload.is_error is False:
        return msgspec.structs.replace(state, succeeded=state.succeeded | {payload.call_id})
    return state


def _ended(state: Amendment, line: bytes, payload: SessionEnded, route: RouteTraffic | None,
           account: RouteAccount | None, rows: tuple[RowCheck, ...] | None) -> tuple[Amendment, tuple[bytes, ...]]:  # fmt: skip
    """The terminal record: the witness's warnings before it, then it with the census and the route;
    byte for byte when nothing changes."""
    event = read_event(line).unwrap()
    seq = event.seq + state.added
    warnings: tuple[WarningRaised, ...] = ()
    if account is not None:
        state = msgspec.structs.replace(state, account=account)
        warnings, calls = reconcile(account, state.stream, payload, state.facts, state.deciding)
        route = None if route is None else msgspec.structs.replace(route, calls=calls)
    bypassed = state.bypassed + bypassed_count(warnings)
    if not warnings and not bypassed and route is None and rows is None and state.added == 0:
        return state, (line,)
    lines = tuple(encode_event(seq + offset, event.run, warning) for offset, warning in enumerate(warnings))
    gaps = state.gaps + sum(1 for warning in warnings if warning.code in WITNESS_GATING)
    state = msgspec.structs.replace(state, added=state.added + len(warnings), bypassed=bypassed, gaps=gaps)
    census = payload.census if not bypassed else msgspec.structs.replace(payload.census, bypassed=bypassed)
    ended = msgspec.structs.replace(payload, census=census, route=route if route is not None else payload.route,
                                    rows=rows if rows is not None else payload.rows)  # fmt: skip
    return state, (*lines, encode_event(seq + len(warnings), event.run, ended, event.at))
