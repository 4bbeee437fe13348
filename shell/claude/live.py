"""The live run loop of a claude run: one readiness loop over the record, the hook channel's doorbell,
metaharness's own stdin and its signals — no polling interval (docs/adapters/common.md#vendor-launch-order,
#vendor-decisions; docs/events.md#wind-up-and-signals).

The child runs in its own process group with stdin ``/dev/null``; each stdout line is appended to the
retained transcript before it is parsed; the last 64 KiB of stderr are kept. Whenever the doorbell
and the record are both ready, the doorbell is drained before new record lines are parsed. Every
decision is the pure session's (``metaharness.pure.claude.session``); this module only moves bytes
and signals in the order its effects say.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING

import msgspec

from metaharness.pure.bounds import COMMAND_LINE_LIMIT, RECORD_LINE_LIMIT
from metaharness.pure.claude.session import (
    Effect,
    HookAnswer,
    Session,
    abandon_pending,
    answered,
    end_of_record,
    expire,
    hook_request,
    read_line,
    request_subjects,
    take_command,
    wind_up,
    write_events,
)
from metaharness.pure.decisions import Arm, Disarm
from metaharness.pure.events import Event, Process
from metaharness.shell.bounded_reads import LineCutter
from metaharness.shell.child_end import PIPE_DRAIN_S, end_descendants
from metaharness.shell.child_process import GRACE_S, STDERR_KEPT, kill_group, wait_status
from metaharness.shell.hook_channel import HookChannel
from metaharness.shell.run_signals import listening
from metaharness.shell.steering import Deadlines, steering_command
from metaharness.shell.tree_links import tree_facts

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn


class RunOutcome(msgspec.Struct, frozen=True):
    """How a driven claude run ended: the session's final state, the closing reason, the child's status."""

    session: Session
    reason: str
    process: Process


class _Loop:
    """The state the readiness loop keeps beside the pure session: timers, buffers, flags."""

    def __init__(self, session: Session, channel: HookChannel, write_event: Callable[[bytes], None], cwd: str) -> None:
        self.session = session
        self.channel = channel
        self.cwd = cwd
        self.write_event = write_event
        self.deadlines = Deadlines(session.desk.deadline_ms)

    def perform(self, effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, bytes):
                self.write_event(effect)
            elif isinstance(effect, HookAnswer):
                delivered = False
                for key in effect.keys:
                    delivered = self.channel.answer(key, effect.body) or delivered
                self.session, more = answered(self.session, delivered)
                self.perform(more)
            elif isinstance(effect, Arm):
                self.deadlines.arm(effect.call_id)
            elif isinstance(effect, Disarm):
                self.deadlines.disarm(effect.call_id)

    def drain_doorbell(self) -> None:
        for key in self.channel.ring():
            raw = self.channel.request(key)
            tree = tree_facts(request_subjects(self.session, key, raw), self.cwd) if raw is not None else None
            self.session, effects = hook_request(self.session, key, raw, tree)
            self.perform(effects)

    def expire_due(self) -> None:
        for call_id, waited in self.deadlines.take_due():
            self.session, effects = expire(self.session, call_id, waited)
            self.perform(effects)


def drive_claude(
    *,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    session: Session,
    channel: HookChannel,
    write_event: Callable[[bytes], None],
    transcript: IO[bytes],
    commands: int | None,
    on_steering_refusal: Callable[[str], None],
    late_events: Callable[[], tuple[Event, ...]] = lambda: (),
    process_known: bool = True,
    alerts: tuple[int, Callable[[], tuple[Event, ...]]] | None = None,
    confined: ConfinedSpawn | None = None,
) -> RunOutcome:
    """Spawn Claude Code, read its record and its hooks through the session until it ends, wind up.

    ``commands`` is the descriptor of metaharness's own stdin (``None``: no commands);
    ``alerts`` is a descriptor that becomes readable when events arise outside the record (the loopback
    proxy's ``auth.expired``) and the callable that hands them over; ``process_known`` false writes ``process`` unknown
    (conformance C3's scripted child, docs/adapters/claude.md#conformance-vectors); ``late_events`` runs once the child
    is reaped (the proxy's ``auth.expired`` and ``LOOPBACK_REFUSED``, ``RETAIN_FAILED``); ``confined`` runs ``argv`` in
    its view instead. Raises ``OSError`` when the spawn itself fails.
    """
    child = subprocess.Popen(
        list(argv) if confined is None else confined.argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        pass_fds=() if confined is None else confined.pass_fds,
    )
    if confined is not None:
        confined.spawned()
    assert child.stdout is not None and child.stderr is not None
    loop = _Loop(session, channel, write_event, cwd)
    wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    previous = {n: signal.signal(n, lambda _n, _f: os.write(wake_write, b"s")) for n in (signal.SIGINT, signal.SIGTERM)}
    def wake(_number: int) -> None:
        os.write(wake_write, b"s")

    listening(child.pid, wake)
    selector = selectors.PollSelector()
    stdout_fd, stderr_fd = child.stdout.fileno(), child.stderr.fileno()
    for descriptor in (stdout_fd, stderr_fd):
        os.set_blocking(descriptor, False)
    selector.register(channel.fileno(), selectors.EVENT_READ, "doorbell")
    selector.register(stdout_fd, selectors.EVENT_READ, "record")
    selector.register(stderr_fd, selectors.EVENT_READ, "stderr")
    selector.register(wake_read, selectors.EVENT_READ, "signal")
    exit_fd = os.pidfd_open(child.pid)
    selector.register(exit_fd, selectors.EVENT_READ, "exited")
    if commands is not None:
        selector.register(commands, selectors.EVENT_READ, "command")
    if alerts is not None:
        selector.register(alerts[0], selectors.EVENT_READ, "alert")
    record_cutter = LineCutter(RECORD_LINE_LIMIT)
    command_cutter = LineCutter(COMMAND_LINE_LIMIT)
    tail = bytearray()
    number = 0
    halted = killed = False
    kill_at: float | None = None
    chunk: bytes | None
    record_open = True
    stderr_open = True
    drained_at: float | None = None
    try:
        while (record_open or stderr_open) and (drained_at is None or time.monotonic() < drained_at):
            timeouts = [t for t in (loop.deadlines.next_at(), kill_at, drained_at) if t is not None]
            timeout = max(0.0, min(timeouts) - time.monotonic()) if timeouts else None
            ready = {key.data for key, _ in selector.select(timeout)}
            if "exited" in ready:
                selector.unregister(exit_fd)
                kill_group(child.pid, signal.SIGKILL)
                drained_at = time.monotonic() + PIPE_DRAIN_S
            if "doorbell" in ready:
                loop.drain_doorbell()
            if "alert" in ready and alerts is not None:
                os.read(alerts[0], 64)
                loop.session, effects = write_events(loop.session, alerts[1]())
                loop.perform(effects)
            if "signal" in ready:
                os.read(wake_read, 64)
                if killed:
                    kill_group(child.pid, signal.SIGKILL)
                else:
                    killed = True
                    loop.session, effects = abandon_pending(loop.session, "the run was interrupted")
                    loop.perform(effects)
                    kill_group(child.pid, signal.SIGTERM)
                    kill_at = time.monotonic() + GRACE_S
            if "command" in ready and commands is not None:
                chunk = os.read(commands, 65536)
                if not chunk:
                    selector.unregister(commands)
                    commands = None
                command_lines = command_cutter.feed(chunk) if commands is not None else [command_cutter.rest()]
                for line in filter(None, command_lines):
                    command = steering_command(line.removesuffix(b"\n"), on_steering_refusal)
                    if command is None:
                        continue
                    loop.session, effects, control = take_command(loop.session, command, loop.deadlines.latency_ms(command))
                    loop.perform(effects)
                    if control is not None:
                        halted = halted or control == "halt"
                        kill_group(child.pid, signal.SIGTERM)
                        kill_at = kill_at or time.monotonic() + GRACE_S
            if "stderr" in ready:
                chunk = _read(stderr_fd)
                if chunk is None:
                    chunk = b""
                elif not chunk:
                    selector.unregister(stderr_fd)
                    stderr_open = False
                tail.extend(chunk)
                del tail[:-STDERR_KEPT]
            if "record" in ready:
                chunk = _read(stdout_fd)
                if chunk is None:
                    chunk = b""
                elif not chunk:
                    selector.unregister(stdout_fd)
                    record_open = False
                record_lines = record_cutter.feed(chunk) if record_open else [record_cutter.rest()]
                for line in filter(None, record_lines):
                    line = line.removesuffix(b"\n")
                    transcript.write(line + b"\n")
                    transcript.flush()
                    loop.drain_doorbell()
                    number += 1
                    loop.session, effects = read_line(loop.session, number, line.removesuffix(b"\r"))
                    loop.perform(effects)
            if kill_at is not None and time.monotonic() >= kill_at:
                kill_group(child.pid, signal.SIGKILL)
                kill_at = None
            loop.expire_due()
        loop.drain_doorbell()
        loop.session, effects = end_of_record(loop.session)
        loop.perform(effects)
        code = _reap(child)
    finally:
        for number_, handler in previous.items():
            signal.signal(number_, handler)
        selector.close()
        os.close(wake_read)
        os.close(wake_write)
        os.close(exit_fd)
    kill_group(child.pid, signal.SIGKILL)
    end_descendants(child.pid)
    process = wait_status(code, process_known)
    loop.session, effects, reason = wind_up(
        loop.session, stderr_tail=bytes(tail), halted=halted, killed=killed and not halted, process=process,
        late=late_events(),
    )  # fmt: skip
    loop.perform(effects)
    return RunOutcome(loop.session, reason, process)


def _reap(child: subprocess.Popen[bytes]) -> int:
    """The child's wait status once its record has ended: a child that lingers after closing its
    stdout is sent SIGTERM after 5 s and SIGKILL 5 s later (docs/adapters/common.md#vendor-launch-order)."""
    for number in (signal.SIGTERM, signal.SIGKILL):
        try:
            return child.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            kill_group(child.pid, number)
    return child.wait()


def _read(descriptor: int) -> bytes | None:
    """What a ready descriptor holds (``b""`` at end of file), or ``None`` when nothing is there yet."""
    try:
        return os.read(descriptor, 65536)
    except BlockingIOError:
        return None
