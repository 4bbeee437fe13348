"""What metaharness adds to a run's stream as it is written, on every kind (docs/confinement.md).

A call metaharness denied whose ``tool.result`` is not an error was let through by something else
(a forged hook-channel answer): right after the later of the two lines a ``warning{DECISION_BYPASSED}``
naming the call is written (a call id presented again starts afresh), later lines are renumbered, ``session.ended.census`` counts it under ``bypassed``
and ``stream.closed.events`` counts the added lines. A confined run's ``session.ended`` carries its
model route's traffic as ``route``, and a live run's its hermetic rows as the audit checks them (``rows``).
``session.started`` names the program the run started as ``program``. The closing reason is the run's outcome
(``metaharness.pure.run_stages.run_outcome``): when the child's exit or the route overrules the record's
``completed``, a ``warning{RUN_FAILED}`` comes directly before ``stream.closed`` and the stream closes ``error``
(docs/events.md#stream-ending). Lines nothing concerns pass through byte for byte.
"""

from __future__ import annotations

import msgspec
from msgspec import UnsetType
from returns.result import Failure

from metaharness.pure.events import (
    Deny,
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

_CONCERNED = (b'"event":"tool.requested"', b'"event":"tool.decided"', b'"event":"tool.result"', b'"event":"session.ended"',
              b'"event":"stream.closed"', b'"event":"session.started"')  # fmt: skip


class Amendment(msgspec.Struct, frozen=True):
    """The amender's state: the calls metaharness denied, the calls whose result was not an error, how
    many lines it added, how many bypasses, the route's traffic written into ``session.ended``, and the
    program the run started (``None``: ``session.started`` is left as written)."""

    denied: frozenset[str] = frozenset()
    succeeded: frozenset[str] = frozenset()
    added: int = 0
    bypassed: int = 0
    route: RouteTraffic | None = None
    program: str | None = None


def decision_bypassed(call_id: str) -> WarningRaised:
    """The warning for a denied call whose result is not an error."""
    return WarningRaised(
        code="DECISION_BYPASSED",
        message=f"metaharness denied call {call_id}, yet its result is not an error: the decision was bypassed",
    )


def amend(
    state: Amendment, line: bytes, route: RouteTraffic | None = None, rows: tuple[RowCheck, ...] | None = None
) -> tuple[Amendment, tuple[bytes, ...]]:
    """The lines to write for ``line``; ``route`` is the model route's traffic when the run is confined,
    ``rows`` the hermetic rows checked at ``session.ended``."""
    if state.added == 0 and not any(marker in line for marker in _CONCERNED):
        return state, (line,)
    read = read_event(line)
    if isinstance(read, Failure):
        return state, (line,)
    event = read.unwrap()
    payload = event.payload
    seq = event.seq + state.added
    call: str | None = None
    if isinstance(payload, ToolRequested):
        fresh = {payload.call_id}
        state = msgspec.structs.replace(state, denied=state.denied - fresh, succeeded=state.succeeded - fresh)
    if isinstance(payload, ToolDecided) and isinstance(payload.decision, Deny):
        call = payload.call_id if payload.call_id in state.succeeded else None
        state = msgspec.structs.replace(state, denied=state.denied | {payload.call_id})
    if isinstance(payload, ToolResult) and payload.is_error is False:
        call = payload.call_id if payload.call_id in state.denied else None
        state = msgspec.structs.replace(state, succeeded=state.succeeded | {payload.call_id})
    if call is not None:
        renumbered = line if state.added == 0 else encode_event(seq, event.run, payload, event.at)
        warning = encode_event(seq + 1, event.run, decision_bypassed(call))
        state = msgspec.structs.replace(
            state, denied=state.denied - {call}, succeeded=state.succeeded - {call}, added=state.added + 1,
            bypassed=state.bypassed + 1,
        )  # fmt: skip
        return state, (renumbered, warning)
    if isinstance(payload, SessionStarted) and state.program is not None:
        started = msgspec.structs.replace(payload, program=state.program)
        return state, (encode_event(seq, event.run, started, event.at),)
    if isinstance(payload, SessionEnded) and (state.bypassed or route is not None or rows is not None):
        census = payload.census if not state.bypassed else msgspec.structs.replace(payload.census, bypassed=state.bypassed)
        ended = msgspec.structs.replace(payload, census=census, route=route if route is not None else payload.route,
                                        rows=rows if rows is not None else payload.rows)  # fmt: skip
        state = msgspec.structs.replace(state, route=route)
        return state, (encode_event(seq, event.run, ended, event.at),)
    if isinstance(payload, StreamClosed):
        return _closed(state, seq, event.run, payload, event.at, line)
    if state.added == 0:
        return state, (line,)
    return state, (encode_event(seq, event.run, payload, event.at),)


def _closed(
    state: Amendment, seq: int, run: str, closed: StreamClosed, at: str | UnsetType, line: bytes
) -> tuple[Amendment, tuple[bytes, ...]]:
    """The closing marker, closing the run's outcome: ``RUN_FAILED`` before it when the exit or the route overrules
    the record, and its ``events`` counting every added line."""
    outcome = run_outcome(closed.reason, closed.process, state.route)
    if outcome.overruled is None:
        if not state.added:
            return state, (line,)
        return state, (encode_event(seq, run, msgspec.structs.replace(closed, events=closed.events + state.added), at),)
    warning = encode_event(seq, run, run_failed(outcome))
    state = msgspec.structs.replace(state, added=state.added + 1)
    marked = msgspec.structs.replace(closed, events=closed.events + state.added, reason=outcome.reason)
    return state, (warning, encode_event(seq + 1, run, marked, at))
