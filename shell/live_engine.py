"""One live loop for every kind: a readiness loop (``selectors``) over the child's pipes, the hook
channel's doorbell, metaharness's own stdin and its SIGINT/SIGTERM (a self-pipe), with timers for the
decision deadlines, the SIGKILL a stop schedules and a kind's own polling. No thread, no queue.

A kind describes its sources once (``on_lines``, ``on_chunks``, ``on_ready``, ``on_signal``,
``timer``) and hands every input to its pure session; when several sources are ready in one pass
their handlers run in the order they were added, so a kind says what goes first (codex drains
the doorbell before new record lines). Timers run after the ready handlers, in the order they
were added.
"""

from __future__ import annotations

import os
import selectors
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from metaharness.shell.bounded_reads import LineCutter

Handler = Callable[[], None]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Engine:
    """The readiness loop of one live run; :meth:`close` releases it and puts the signals back."""

    def __init__(self) -> None:
        self._selector = selectors.PollSelector()
        self._added = 0
        self._timers: list[tuple[Callable[[], float | None], Handler]] = []
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._previous: dict[int, Any] = {}
        self._owned: list[int] = []

    def on_ready(self, fd: int, handler: Handler) -> None:
        """Call ``handler`` whenever ``fd`` is readable."""
        self._selector.register(fd, selectors.EVENT_READ, (self._added, handler))
        self._added += 1

    def forget(self, fd: int) -> None:
        """Stop watching ``fd``."""
        self._selector.unregister(fd)

    def on_exit(self, pid: int, handler: Handler) -> None:
        """Call ``handler`` once, when process ``pid`` (a child of this one) has exited."""
        exit_fd = os.pidfd_open(pid)
        self._owned.append(exit_fd)

        def ready() -> None:
            self.forget(exit_fd)
            handler()

        self.on_ready(exit_fd, ready)

    def on_chunks(self, fd: int, on_chunk: Callable[[bytes], None], on_end: Handler) -> None:
        """Each chunk ``fd`` holds to ``on_chunk``; at its end it is forgotten and ``on_end`` called."""
        os.set_blocking(fd, False)

        def ready() -> None:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if chunk:
                on_chunk(chunk)
                return
            self.forget(fd)
            on_end()

        self.on_ready(fd, ready)

    def on_lines(self, fd: int, limit: int, on_line: Callable[[bytes], None], on_end: Handler) -> None:
        """Each line ``fd`` holds, cut to ``limit`` bytes (``metaharness.shell.bounded_reads``), to
        ``on_line`` with its ``\\n`` (the last one as it ended); at its end it is forgotten and
        ``on_end`` called."""
        cutter = LineCutter(limit)

        def chunk(data: bytes) -> None:
            for line in cutter.feed(data):
                on_line(line)

        def end() -> None:
            rest = cutter.rest()
            if rest:
                on_line(rest)
            on_end()

        self.on_chunks(fd, chunk, end)

    def on_signal(self, handler: Callable[[int], None]) -> None:
        """SIGINT and SIGTERM sent to metaharness go to ``handler`` in the loop, one call each
        (installed on the main thread only; :meth:`signal` hands one over from anywhere)."""
        if threading.current_thread() is threading.main_thread():
            for number in _SIGNALS:
                self._previous[number] = signal.signal(number, self._caught)

        def ready() -> None:
            try:
                numbers = os.read(self._wake_read, 64)
            except BlockingIOError:
                return
            for number in numbers:
                handler(number)

        self.on_ready(self._wake_read, ready)

    def _caught(self, number: int, _frame: FrameType | None) -> None:
        self.signal(number)

    def signal(self, number: int) -> None:
        """Hand signal ``number`` to the loop."""
        os.write(self._wake_write, bytes([number]))

    def timer(self, next_at: Callable[[], float | None], fire: Handler) -> None:
        """Call ``fire`` once the monotonic clock reaches ``next_at()`` (``None``: nothing due)."""
        self._timers.append((next_at, fire))

    def run(self, until: Callable[[], bool]) -> None:
        """Wait for readiness or the next timer and dispatch, until ``until()`` holds."""
        while not until():
            dues = [at for at in (next_at() for next_at, _ in self._timers) if at is not None]
            timeout = max(0.0, min(dues) - time.monotonic()) if dues else None
            ready = sorted((key.data for key, _ in self._selector.select(timeout)), key=lambda data: data[0])
            for _, handler in ready:
                handler()
            now = time.monotonic()
            for next_at, fire in self._timers:
                at = next_at()
                if at is not None and now >= at:
                    fire()

    def close(self) -> None:
        for number, previous in self._previous.items():
            signal.signal(number, previous)
        self._selector.close()
        for fd in (self._wake_read, self._wake_write, *self._owned):
            os.close(fd)


def read_rest(fd: int, within_s: float) -> bytes:
    """What ``fd`` still holds, read until its end or for at most ``within_s`` seconds."""
    os.set_blocking(fd, False)
    until = time.monotonic() + within_s
    rest = bytearray()
    with selectors.PollSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while (left := until - time.monotonic()) > 0 and selector.select(left):
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                break
            rest.extend(chunk)
    return bytes(rest)
