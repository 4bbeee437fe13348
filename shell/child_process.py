"""What every kind's live loop does with its child process (docs/events.md#wind-up-and-signals,
docs/adapters/b10x.md#process-wiring, docs/adapters/common.md#vendor-launch-order): the group signalled,
the stops of the kind's policy sent, and the wait status read as ``process``; the loop itself is
``metaharness.shell.live_engine``."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

from metaharness.pure.events import Exited, Process, Signaled, UnknownProcess
from metaharness.pure.stop import Cause, Stop, Stopping, StopPolicy, stop_for

STDERR_KEPT = 64 * 1024
"""The last 64 KiB of the child's stderr are kept for ``NO_TERMINAL_RECORD``."""


def kill_group(pid: int, number: int) -> None:
    """Signal the child's process group; a group that is gone is not an error."""
    try:
        os.killpg(pid, number)
    except (ProcessLookupError, PermissionError):
        pass


class ChildStop:
    """Sends the stops a kind's pure policy gives (``metaharness.pure.stop``): ``take`` folds a cause
    into the run's ``Stopping`` record and sends its signal, to the group or through ``signal_child``
    to the child alone; a SIGKILL to the group falls due ``grace_s`` later (``due`` sends it)."""

    def __init__(self, pid: int, policy: StopPolicy, signal_child: Callable[[int], None] | None = None) -> None:
        self.pid = pid
        self.policy = policy
        self.signal_child = signal_child
        self.stopping = Stopping()
        self.kill_at: float | None = None

    @property
    def halted(self) -> bool:
        return self.stopping.halted

    @property
    def killed(self) -> bool:
        """Whether metaharness was signalled."""
        return self.stopping.signalled

    def take(self, cause: Cause) -> None:
        """``interrupt``, ``halt`` or a signal took effect: send what the policy says."""
        self.stopping, stop = stop_for(self.policy, self.stopping, cause)
        self.send(stop)

    def send(self, stop: Stop) -> None:
        number = getattr(signal, stop.signal)
        if stop.target == "group" or self.signal_child is None:
            kill_group(self.pid, number)
        else:
            self.signal_child(number)
        if stop.grace_s is not None:
            at = time.monotonic() + stop.grace_s
            self.kill_at = at if self.kill_at is None else min(self.kill_at, at)

    def due(self, now: float) -> None:
        """Send the scheduled SIGKILL once its time has come."""
        if self.kill_at is not None and now >= self.kill_at:
            kill_group(self.pid, signal.SIGKILL)
            self.kill_at = None


def wait_status(code: int, known: bool = True) -> Process:
    """``stream.closed.process`` from a wait status (negative: the signal), or unknown when the child
    is not the harness (conformance C3's scripted child)."""
    if not known:
        return UnknownProcess()
    return Signaled(signal=-code) if code < 0 else Exited(code=code)
