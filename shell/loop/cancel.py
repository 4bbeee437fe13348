"""The one cancellation token shared by loop and transport (docs/loop.md#the-turn-loop Cancellation).

SIGINT and SIGTERM set it; a second one while cancelling exits 130 at once. Inside ``blocking()``
(a socket read, a stdin read, a child's wait) the signal also interrupts the blocked call. The run's
deadline arms a timer that interrupts the same way.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Interrupted(BaseException):
    """Raised inside ``blocking()`` when the token is set or the deadline passes."""


class CancelToken:
    """Set by a signal or the deadline; polled between events, calls and backoff slices."""

    def __init__(self, deadline_ms: int | None, started: float, wait_scale: float = 1.0) -> None:
        self.cancelled = False
        self.deadline_ms = deadline_ms
        self.started = started
        self.wait_scale = wait_scale
        self._blocking = 0
        self._deadline_bound = 0

    def install(self) -> None:
        """Route SIGINT and SIGTERM (and the deadline timer) here."""
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        if self.deadline_ms is not None:
            signal.signal(signal.SIGALRM, self._on_deadline)
            signal.setitimer(signal.ITIMER_REAL, max(self.deadline_ms / 1000, 0.001))

    def elapsed_ms(self) -> int:
        """Milliseconds since the run started."""
        return int((time.monotonic() - self.started) * 1000)

    def remaining_s(self) -> float | None:
        """Seconds left before the deadline, ``None`` without one."""
        if self.deadline_ms is None:
            return None
        return max(self.deadline_ms / 1000 - (time.monotonic() - self.started), 0.0)

    def past_deadline(self) -> bool:
        """Whether the deadline has passed."""
        return self.deadline_ms is not None and self.elapsed_ms() >= self.deadline_ms

    def stopping(self) -> bool:
        """Cancelled or past the deadline."""
        return self.cancelled or self.past_deadline()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.cancelled:
            os._exit(130)
        self.cancelled = True
        if self._blocking:
            raise Interrupted

    def _on_deadline(self, signum: int, frame: FrameType | None) -> None:
        if self._deadline_bound:
            raise Interrupted

    @contextmanager
    def blocking(self, bounded_by_deadline: bool = True) -> Iterator[None]:
        """A region a signal (and, when ``bounded_by_deadline``, the deadline) interrupts with ``Interrupted``.

        The wait for an approver's answer is not bounded by the deadline (docs/loop.md#the-turn-loop).
        """
        if self.cancelled or (bounded_by_deadline and self.past_deadline()):
            raise Interrupted
        self._blocking += 1
        self._deadline_bound += bounded_by_deadline
        try:
            yield
        finally:
            self._blocking -= 1
            self._deadline_bound -= bounded_by_deadline

    def sleep(self, seconds: float) -> bool:
        """A cancellable pause of ``seconds`` times ``wait_scale``, in slices of at most 25 ms; ``False`` when
        interrupted."""
        end = time.monotonic() + seconds * self.wait_scale
        while True:
            if self.stopping():
                return False
            left = end - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(left, 0.025))
