"""What every kind's live loop does with its child process and its own signals (docs/events.md#wind-up-and-signals,
docs/adapters/b10x.md#process-wiring, docs/adapters/common.md#vendor-launch-order): the group signalled, stderr's tail
kept, lines pumped into a queue, SIGINT and SIGTERM turned into queue events, and the wait status read
as ``process``."""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from typing import IO, Any

from metaharness.pure.bounds import COMMAND_LINE_LIMIT, RECORD_LINE_LIMIT
from metaharness.pure.events import Exited, Process, Signaled, UnknownProcess
from metaharness.shell.bounded_reads import bounded_lines, descriptor_lines

STDERR_KEPT = 64 * 1024
"""The last 64 KiB of the child's stderr are kept for ``NO_TERMINAL_RECORD``."""

GRACE_S = 5.0
"""A signal, ``interrupt`` or ``halt`` sends the group SIGTERM, then SIGKILL this many seconds later."""


def kill_group(pid: int, number: int) -> None:
    """Signal the child's process group; a group that is gone is not an error."""
    try:
        os.killpg(pid, number)
    except (ProcessLookupError, PermissionError):
        pass


class GroupStop:
    """How a live loop stops its child's group (docs/events.md#wind-up-and-signals): ``terminate`` sends SIGTERM and
    schedules SIGKILL ``GRACE_S`` later (``due`` sends it); ``halt`` and a signal are remembered for the
    closing reason, and a second signal kills at once."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.halted = False
        self.killed = False
        self.kill_at: float | None = None

    def terminate(self) -> None:
        """SIGTERM the group now, SIGKILL it ``GRACE_S`` from now."""
        kill_group(self.pid, signal.SIGTERM)
        self.kill_at = time.monotonic() + GRACE_S

    def control(self, control: str) -> None:
        """An ``interrupt`` or ``halt`` command took effect: end the child."""
        self.halted = self.halted or control == "halt"
        self.terminate()

    def second_signal(self) -> bool:
        """A signal arrived: a second one SIGKILLs the group at once (True); the first is remembered
        (False) and the caller abandons pending calls before it calls ``terminate``."""
        if self.killed:
            kill_group(self.pid, signal.SIGKILL)
            return True
        self.killed = True
        return False

    def due(self, now: float) -> None:
        """Send the scheduled SIGKILL once its time has come."""
        if self.kill_at is not None and now >= self.kill_at:
            kill_group(self.pid, signal.SIGKILL)
            self.kill_at = None


def keep_tail(stream: IO[bytes], tail: bytearray) -> None:
    """Read ``stream`` to its end, keeping its last :data:`STDERR_KEPT` bytes in ``tail``."""
    for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
        tail.extend(chunk)
        del tail[:-STDERR_KEPT]


def pump_lines(stream: IO[bytes], kind: str, events: queue.Queue[tuple[str, Any]]) -> None:
    """Each record line of ``stream`` (cut to ``RECORD_LINE_LIMIT``) as ``(kind, line)``, then
    ``(kind, None)`` at its end."""
    for line in bounded_lines(stream, RECORD_LINE_LIMIT):
        events.put((kind, line))
    events.put((kind, None))


def pump_fd(fd: int, kind: str, events: queue.Queue[tuple[str, Any]]) -> None:
    """Each command line read from a raw descriptor (metaharness's own stdin, cut to
    ``COMMAND_LINE_LIMIT``) as ``(kind, line)``, then ``(kind, None)``: no buffered reader's lock is
    held at interpreter shutdown."""
    for line in descriptor_lines(fd, COMMAND_LINE_LIMIT):
        events.put((kind, line))
    events.put((kind, None))


class SignalQueue:
    """SIGINT and SIGTERM sent to metaharness, turned into ``("signal", number)`` queue events while
    the child runs (installed only on the main thread); ``restore`` puts the previous handlers back."""

    def __init__(self, events: queue.Queue[tuple[str, Any]]) -> None:
        self.events = events
        self.previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for number in (signal.SIGINT, signal.SIGTERM):
            self.previous[number] = signal.signal(number, self._handle)

    def _handle(self, number: int, _frame: object) -> None:
        self.events.put(("signal", number))

    def restore(self) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)


def wait_status(code: int, known: bool = True) -> Process:
    """``stream.closed.process`` from a wait status (negative: the signal), or unknown when the child
    is not the harness (conformance C3's scripted child)."""
    if not known:
        return UnknownProcess()
    return Signaled(signal=-code) if code < 0 else Exited(code=code)
