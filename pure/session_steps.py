"""The one pure session protocol every kind's live loop steps through (docs/DEVELOPING.md#the-run-engine): a kind's
session value and its pure functions for the inputs every loop takes the same way — a signal abandons the pending
calls, a steering line is taken, a deadline expires, the record ends. What a kind reads beyond these (its record, its
hook channel) stays the kind's own. A hook-seam session (its calls on the decision desk, its record through the
correlator: claude's, gemini's) gets its expiry, abandonment and end of record here (:func:`desk_steps`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from metaharness.pure.commands import Steering
from metaharness.pure.correlation import Correlator, on_stream_end
from metaharness.pure.decisions import AbandonCause, Control, Desk, abandon
from metaharness.pure.decisions import expire as desk_expire

S = TypeVar("S")
E = TypeVar("E")


class SessionSteps(msgspec.Struct, Generic[S, E], frozen=True):
    """A kind's pure session functions over its session ``S``, each giving the next session and the effects ``E``
    its loop performs in order."""

    abandon_pending: Callable[[S, AbandonCause], tuple[S, tuple[E, ...]]]
    expire: Callable[[S, str, int], tuple[S, tuple[E, ...]]]
    take_command: Callable[[S, Steering, int | None], tuple[S, tuple[E, ...], Control]]
    end_of_record: Callable[[S], tuple[S, tuple[E, ...]]]


class DeskSession(Protocol):
    """A session whose calls wait on the decision desk and whose record goes through the correlator."""

    @property
    def desk(self) -> Desk: ...

    @property
    def correlator(self) -> Correlator: ...


D = TypeVar("D", bound=DeskSession)
EmitAll = Callable[[D, tuple[Any, ...]], tuple[D, tuple[E, ...]]]
"""A kind's own walk over desk effects and correlator outputs, in order (its events noted, its answers routed)."""


def _replaced(session: D, **changes: object) -> D:
    """``session`` with ``changes``: every desk session is a frozen ``msgspec.Struct``, which a protocol cannot say."""
    return msgspec.structs.replace(session, **changes)  # type: ignore[type-var]


def _expire(emit_all: EmitAll[D, E], session: D, call_id: str, elapsed_ms: int) -> tuple[D, tuple[E, ...]]:
    """A call's deadline fired ``elapsed_ms`` after arming: deny by ``deadline`` (docs/decisions.md#deadlines)."""
    desk, effects = desk_expire(session.desk, call_id, elapsed_ms)
    return emit_all(_replaced(session, desk=desk), effects)


def _abandon_pending(emit_all: EmitAll[D, E], session: D, why: AbandonCause) -> tuple[D, tuple[E, ...]]:
    """Every pending call denied by ``adapter`` with ``PENDING_CALL_ABANDONED``
    (docs/decisions.md#correlation-and-abandonment)."""
    desk, effects = abandon(session.desk, why)
    return emit_all(_replaced(session, desk=desk), effects)


def _end_of_record(emit_all: EmitAll[D, E], session: D) -> tuple[D, tuple[E, ...]]:
    """The record ended: every held call takes path (b) (docs/adapters/common.md#one-event-per-call), then every
    pending call is abandoned by the end of the stream (docs/decisions.md#correlation-and-abandonment), its deny
    handed to the hook first."""
    correlator, outputs = on_stream_end(session.correlator)
    session, released = emit_all(_replaced(session, correlator=correlator), outputs)
    session, abandoned = _abandon_pending(emit_all, session, "the stream ended")
    return session, (*released, *abandoned)


def desk_steps(
    emit_all: EmitAll[D, E], take_command: Callable[[D, Steering, int | None], tuple[D, tuple[E, ...], Control]]
) -> SessionSteps[D, E]:
    """A hook-seam session's steps: expiry, abandonment and the end of the record on the desk and the correlator,
    through the kind's ``emit_all``; ``take_command`` is the kind's own."""
    return SessionSteps(
        abandon_pending=partial(_abandon_pending, emit_all),
        expire=partial(_expire, emit_all),
        take_command=take_command,
        end_of_record=partial(_end_of_record, emit_all),
    )
