"""The shell's side of ``run``'s refusal stages, shared by every kind (docs/hermetic.md#refusal-order;
docs/events.md#wind-up-and-signals).

A stage that refuses raises :class:`Refused` (``take`` unwraps a pure stage's ``Result`` or raises
it); the run catches it once, removes what it had started and prints the refusal line.
:class:`EarlySignal` turns a SIGINT or SIGTERM that arrives before the spawn into the refusal
``signalled``. ``write_event`` writes one event line to stdout and flushes it; ``stderr_line`` one
diagnostic line (a refused steering line); ``unusable_directory`` stage 6's directory checks.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
from typing import Self, TypeVar

from returns.result import Failure, Result

from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.shell.child_end import adopt_orphans
from metaharness.shell.endpoint_reach import endpoint_refusal
from metaharness.shell.run_signals import first_held, hold_late, holding, take_held

T = TypeVar("T")


class Refused(Exception):
    """A stage's refusal, carried out of the stage to the one place that reports it."""

    def __init__(self, refusal: Refusal) -> None:
        self.refusal = refusal


def take(result: Result[T, Refusal]) -> T:
    """The value of a pure stage, or its refusal raised as :class:`Refused`."""
    if isinstance(result, Failure):
        raise Refused(result.failure())
    return result.unwrap()


class EarlySignal:
    """A SIGINT or SIGTERM that arrives before the spawn (or was held since start-up) stops the run as
    a refusal (docs/events.md#wind-up-and-signals); leaving, it hands over to ``metaharness.shell.run_signals``' late
    handler when the process holds its signals."""

    def __init__(self) -> None:
        self.name: str | None = None
        self.previous: dict[int, object] = {}

    def __enter__(self) -> Self:
        for number in (int(signal.SIGINT), int(signal.SIGTERM)):
            self.previous[number] = signal.signal(number, self._note)
        for number in take_held():
            self._note(number, None)
        return self

    def _note(self, number: int, _frame: object) -> None:
        self.name = self.name or signal.Signals(number).name

    def check(self) -> None:
        """Raise ``signalled`` when a signal arrived since the guard was entered."""
        if self.name is not None:
            raise Refused(signalled(self.name))

    def __exit__(self, *_exc: object) -> None:
        if holding():
            hold_late()
            adopt_orphans()
            return
        for number, handler in self.previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]


def signalled(name: str) -> Refusal:
    """The refusal of a signal that arrived before the spawn."""
    return Refusal("signalled", f"{name} arrived before the harness was started")


def check_held() -> None:
    """``EarlySignal.check`` before the guard is entered (a kind's stages 5–7, ahead of its run module): raise
    ``signalled`` when a signal is held, leaving it held for the guard."""
    number = first_held()
    if number is not None:
        raise Refused(signalled(signal.Signals(number).name))


def write_event(line: bytes) -> bool:
    """One event line to stdout, flushed; false when its reader went away (the caller stops the run)."""
    try:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    except (BrokenPipeError, ValueError):
        return False
    return True


def stderr_line(text: str) -> None:
    """One diagnostic line to stderr."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def is_directory(path: str) -> bool:
    """``path`` names a directory (a link to one included)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def unusable_directory(options: RunOptions) -> Refusal | None:
    """Stage 6's first checks on every kind (docs/hermetic.md#refusal-order): ``cwd-unusable``, then
    ``retain-dir-unusable``, for a directory that is missing or is not one."""
    if options.cwd is not None and not is_directory(options.cwd):
        return Refusal("cwd-unusable", f"--cwd {options.cwd} is missing or not a directory")
    if options.retain_dir is not None and not is_directory(options.retain_dir):
        return Refusal("retain-dir-unusable", f"--retain-dir {options.retain_dir} is missing or not a directory")
    return None


def reach_endpoint(options: RunOptions) -> None:
    """The last check before the spawn: ``endpoint-unreachable`` raised when nothing accepts a connect at
    ``--model-endpoint`` (``metaharness.shell.endpoint_reach``)."""
    refusal = endpoint_refusal(options.model_endpoint)
    if refusal is not None:
        raise Refused(refusal)
