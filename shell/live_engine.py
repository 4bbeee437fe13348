"""One live loop for every kind: a readiness loop (``selectors``) over the child's pipes, the hook
channel's doorbell, metaharness's own stdin and its SIGINT/SIGTERM (a self-pipe), with timers for the
decision deadlines, the SIGKILL a stop schedules and a kind's own polling. No thread, no queue.

A kind describes its sources once (``on_lines``, ``on_chunks``, ``on_ready``, ``on_signal``,
``timer``) and hands every input to its pure session; when several sources are ready in one pass
their handlers run in the order they were added, so a kind says what goes first (codex drains
the doorbell before new record lines). Timers run after the ready handlers, in the order they
were added.

:class:`LiveLoop` is what every kind's loop keeps beside its pure session (``metaharness.pure.session_steps``):
the deadline timers, the stop, the stderr tail, and the inputs every session takes the same way (a signal, a
steering line, a deadline); a kind's ``live.py`` adds only its own reading and how it performs its effects
(docs/DEVELOPING.md#the-run-engine). :func:`spawn` starts the child the way every kind does, and :func:`reap`
waits out one that lingers after its record ended. A loop hands each event value to its writer (a run's
``RunAudit.write_event``; :class:`StreamLines` for a stream kept whole with nothing amended).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, Generic, TypeVar

from metaharness.pure.bounds import COMMAND_LINE_LIMIT
from metaharness.pure.budgets import GRACE_S
from metaharness.pure.events import EventValue, Process, Stream
from metaharness.pure.session_steps import SessionSteps
from metaharness.pure.stream_writer import write_line
from metaharness.shell.bounded_reads import LineCutter
from metaharness.shell.child_end import end_descendants
from metaharness.shell.child_process import STDERR_KEPT, ChildStop, kill_group, wait_status
from metaharness.shell.run_signals import listening
from metaharness.shell.steering import Deadlines, steering_command

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn

S = TypeVar("S")
E = TypeVar("E")

Handler = Callable[[], None]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StreamLines:
    """A stream's lines kept whole, each event value numbered and encoded by the writer with nothing amended
    (conformance C3's scripted runs)."""

    def __init__(self, run: str) -> None:
        self.stream = Stream(run)
        self.lines = bytearray()

    def write(self, value: EventValue) -> None:
        self.stream, line = write_line(self.stream, value)
        self.lines.extend(line)


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

    def pause(self, fd: int) -> Handler:
        """Stop watching ``fd`` for now; the returned call watches it again in its old place in the order."""
        data = self._selector.unregister(fd).data

        def resume() -> None:
            self._selector.register(fd, selectors.EVENT_READ, data)

        return resume

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


def spawn(
    argv: Sequence[str], *, cwd: str, env: Mapping[str, str], stdin: int | IO[bytes], stdout: int | IO[bytes],
    confined: ConfinedSpawn | None, stderr: int | IO[bytes] = subprocess.PIPE, own_group: bool = True,
) -> subprocess.Popen[bytes]:
    """The child in its own process group with its stderr a pipe (in ``confined``'s view when given, which is told
    it was spawned); a helper beside the child (codex's catalogue server) stays in metaharness's group with its
    stderr where it is kept (``own_group`` false, ``stderr``). Raises ``OSError`` when the spawn itself fails."""
    child = subprocess.Popen(
        list(argv) if confined is None else confined.argv, cwd=cwd, env=dict(env), stdin=stdin, stdout=stdout,
        stderr=stderr, start_new_session=own_group, pass_fds=() if confined is None else confined.pass_fds,
    )  # fmt: skip
    if confined is not None:
        confined.spawned()
    return child


def reap(child: subprocess.Popen[bytes]) -> int:
    """The child's wait status once its record has ended: a child that lingers after closing its stdout is sent
    SIGTERM after 5 s and SIGKILL 5 s later (docs/adapters/common.md#vendor-launch-order)."""
    for number in (signal.SIGTERM, signal.SIGKILL):
        try:
            return child.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            kill_group(child.pid, number)
    return child.wait()


def ended(pid: int, code: int, process_known: bool = True) -> Process:
    """Once the record has ended and the child is reaped: its group sent SIGKILL, every orphan ended, and its
    status (``unknown`` when ``process_known`` is false, conformance C3's scripted child)."""
    kill_group(pid, signal.SIGKILL)
    end_descendants(pid)
    return wait_status(code, process_known)


class LiveLoop(ABC, Generic[S, E]):
    """What the engine's handlers keep beside a kind's pure session: the deadline timers, the stop and the stderr
    tail; a kind sets its session and its stop, performs its effects (:meth:`perform`) and adds its own sources."""

    def __init__(self, steps: SessionSteps[S, E], deadline_ms: int) -> None:
        self.steps = steps
        self.session: S
        self.deadlines = Deadlines(deadline_ms)
        self.stopper: ChildStop
        self.tail = bytearray()

    @abstractmethod
    def perform(self, effects: tuple[E, ...]) -> None:
        """The session's effects in order (the kind's own)."""

    def step(self, taken: tuple[S, tuple[E, ...]]) -> None:
        """Take the session an input gave and perform its effects."""
        self.session, effects = taken
        self.perform(effects)

    def signalled(self, _number: int) -> None:
        """A signal: the first abandons every pending call, then the stop policy ends the child."""
        if not self.stopper.killed:
            self.step(self.steps.abandon_pending(self.session, "the run was interrupted"))
        self.stopper.take("signal")

    def command(self, line: bytes, on_steering_refusal: Callable[[str], None]) -> None:
        """One ``metaharness.command/1`` line; an ``interrupt`` or ``halt`` that took effect stops the child."""
        command = steering_command(line, on_steering_refusal)
        if command is None:
            return
        self.session, effects, control = self.steps.take_command(
            self.session, command, self.deadlines.latency_ms(command)
        )
        self.perform(effects)
        if control is not None:
            self.stopper.take(control)

    def end_of_record(self) -> None:
        """The record ended: the session releases what it held and abandons what is pending."""
        self.step(self.steps.end_of_record(self.session))

    def expire_due(self) -> None:
        for call_id, waited in self.deadlines.take_due():
            self.step(self.steps.expire(self.session, call_id, waited))

    def stderr(self, chunk: bytes) -> None:
        self.tail.extend(chunk)
        del self.tail[:-STDERR_KEPT]

    def watch_outside(
        self, engine: Engine, pid: int, commands: int | None, on_steering_refusal: Callable[[str], None]
    ) -> None:
        """The sources outside the child, in this order: metaharness's signals (handed over from start-up) and its
        steering lines on stdin (``None``: none)."""
        engine.on_signal(self.signalled)
        listening(pid, engine.signal)
        if commands is not None:
            on_command = partial(self.command, on_steering_refusal=on_steering_refusal)
            engine.on_lines(commands, COMMAND_LINE_LIMIT, on_command, lambda: None)

    def watch_timers(self, engine: Engine) -> None:
        """The stop's SIGKILL when it is due, then the decision deadlines."""
        engine.timer(lambda: self.stopper.kill_at, lambda: self.stopper.due(time.monotonic()))
        engine.timer(self.deadlines.next_at, self.expire_due)
