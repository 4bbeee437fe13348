"""SIGINT and SIGTERM over a run's whole life, so a signal at any moment ends the run as docs/cli.md's
"Wind-up and signals" says, never metaharness alone: in the first milliseconds, between the stages
and the spawn, and during the wind-up.

The entry point calls :func:`hold_signals` before the CLI is imported: from then on a signal is held,
never fatal. A verb other than ``run`` gets the defaults back (:func:`release_signals`). For ``run``,
``EarlySignal`` takes over what was held (the refusal ``signalled``) and, on leaving, hands back to
the late handler: a signal that arrives while no live loop listens is held until a loop starts
listening (:func:`listening`), which receives it as if it had just arrived; once the child's group is
known, a signal the loop no longer hears (the wind-up) sends that group SIGKILL, and the wind-up
completes, the stream closes and the scratch root is removed.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from types import FrameType

HANDLED = (signal.SIGINT, signal.SIGTERM)

_held: list[int] = []
"""Signals that arrived with nothing listening, oldest first."""

_holding = False
_group: int | None = None


def _late(number: int, _frame: FrameType | None) -> None:
    if _group is None:
        _held.append(number)
        return
    try:
        os.killpg(_group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def hold_signals() -> None:
    """From now on SIGINT and SIGTERM are held (or end the child's group), never fatal."""
    global _holding
    _holding = True
    for number in HANDLED:
        signal.signal(number, _late)


def holding() -> bool:
    """Whether this process holds its signals (it was started by the entry point)."""
    return _holding


def release_signals() -> tuple[int, ...]:
    """Give SIGINT and SIGTERM back their defaults and return the signals held until then."""
    global _holding
    _holding = False
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return take_held()


def first_held() -> int | None:
    """The oldest signal held so far, still held (the stages before a kind's run module look, ``EarlySignal`` takes)."""
    return _held[0] if _held else None


def take_held() -> tuple[int, ...]:
    """The signals held so far, oldest first; they are no longer held."""
    taken = tuple(_held)
    _held.clear()
    return taken


def hold_late() -> None:
    """Hold signals again after the stages before the spawn (``EarlySignal`` leaving)."""
    for number in HANDLED:
        signal.signal(number, _late)


def listening(group: int, listen: Callable[[int], None]) -> None:
    """A live loop now listens with ``listen`` and its child leads process group ``group``: every
    signal held since the stages ended is handed to it, oldest first, and from now on a signal the
    loop does not hear sends the group SIGKILL."""
    global _group
    _group = group
    for number in take_held():
        listen(number)


def spawned_group() -> int | None:
    """The process group of the run's child once a live loop listens, else ``None``."""
    return _group
