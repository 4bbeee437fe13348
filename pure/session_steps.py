"""The one pure session protocol every kind's live loop steps through (docs/DEVELOPING.md#the-run-engine): a kind's
session value and its pure functions for the inputs every loop takes the same way — a signal abandons the pending
calls, a steering line is taken, a deadline expires. What a kind reads beyond these (its record, its hook
channel) stays the kind's own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import msgspec

from metaharness.pure.commands import Steering
from metaharness.pure.decisions import AbandonCause, Control

S = TypeVar("S")
E = TypeVar("E")

class SessionSteps(msgspec.Struct, Generic[S, E], frozen=True):
    """A kind's pure session functions over its session ``S``, each giving the next session and the effects ``E``
    its loop performs in order."""

    abandon_pending: Callable[[S, AbandonCause], tuple[S, tuple[E, ...]]]
    expire: Callable[[S, str, int], tuple[S, tuple[E, ...]]]
    take_command: Callable[[S, Steering, int | None], tuple[S, tuple[E, ...], Control]]
