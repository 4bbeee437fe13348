"""The shell of ``run --timeout`` and of a closed stdout (``metaharness.pure.run_limits``): a timer,
the event writer's broken pipe, and SIGTERM sent to metaharness itself, which every kind's live loop
already turns into a stop like any SIGTERM from outside."""

from __future__ import annotations

import os
import signal
import threading

from metaharness.pure.budgets import STOP_RETRY_S
from metaharness.pure.events import WarningRaised
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_limits import run_timeout, stdout_closed


class RunLimits:
    """One run's timeout and its stdout: ``arm`` starts the timer just before the live loop; a lost
    stdout (``wrote(False)``) or the timer stops the run by SIGTERM, once, while it is live;
    ``late_events`` ends the live part and gives ``RUN_TIMEOUT`` when the timer stopped it;
    ``refusal`` is ``stdout-closed`` once stdout was lost."""

    def __init__(self, timeout_s: float | None) -> None:
        self.timeout_s = timeout_s
        self.lock = threading.Lock()
        self.live = False
        self.stopped = False
        self.expired = False
        self.stdout_lost = False
        self.written = 0
        self.timer: threading.Timer | None = None

    def arm(self) -> None:
        """The live loop is about to start: from now on a limit stops the run."""
        with self.lock:
            self.live = True
        if self.stdout_lost:
            self._stop(expiry=False)
        if self.timeout_s is not None:
            self._schedule(self.timeout_s, expiry=True)

    def _schedule(self, delay: float, *, expiry: bool) -> None:
        self.timer = threading.Timer(delay, self._stop, kwargs={"expiry": expiry})
        self.timer.daemon = True
        self.timer.start()

    def _stop(self, expiry: bool) -> None:
        """SIGTERM to metaharness itself, once per run, while the live loop handles it; before its
        handler is installed, try again shortly."""
        with self.lock:
            if not self.live or self.stopped:
                return
            if not callable(signal.getsignal(signal.SIGTERM)):
                self._schedule(STOP_RETRY_S, expiry=expiry)
                return
            self.stopped = True
            self.expired = expiry
        os.kill(os.getpid(), signal.SIGTERM)

    def wrote(self, written: bool) -> None:
        """One event line was offered to stdout; ``written`` false means its reader is gone."""
        if written:
            self.written += 1
            return
        if self.stdout_lost:
            return
        self.stdout_lost = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        self._stop(expiry=False)

    def late_events(self) -> tuple[WarningRaised, ...]:
        """The live loop has reaped the child: no limit stops anything any more; ``RUN_TIMEOUT`` when
        the timer had fired."""
        with self.lock:
            self.live = False
            if self.timer is not None:
                self.timer.cancel()
        return (run_timeout(self.timeout_s),) if self.expired and self.timeout_s is not None else ()

    def refusal(self) -> Refusal | None:
        """``stdout-closed`` when the run's stdout was lost: the run ends with it instead of its exit."""
        return stdout_closed(self.written) if self.stdout_lost else None
