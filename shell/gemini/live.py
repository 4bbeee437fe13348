"""The live run loop of a gemini run: the engine's readiness loop (``metaharness.shell.live_engine``) over the
stream-json record on stdout, the hook channel's doorbell, metaharness's own stdin and its signals
(docs/adapters/gemini.md#seam; docs/events.md#wind-up-and-signals).

The child runs in its own process group with stdin ``/dev/null``; each stdout line is appended to the
retained record before it is parsed; the last 64 KiB of stderr are kept. Every decision is the pure
session's (``metaharness.pure.gemini.session``); this module only moves bytes and signals in the order its
effects say.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from functools import partial
from typing import IO, TYPE_CHECKING

from returns.result import Failure

from metaharness.pure.bounds import COMMAND_LINE_LIMIT, RECORD_LINE_LIMIT
from metaharness.pure.decisions import Arm, Disarm
from metaharness.pure.events import Event
from metaharness.pure.gemini.launch import GeminiLaunch
from metaharness.pure.gemini.session import (
    STOP_POLICY,
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
)
from metaharness.pure.hook_channel import channel_refused
from metaharness.pure.run_end import RunEnd
from metaharness.pure.stop import GRACE_S
from metaharness.shell.child_end import PIPE_DRAIN_S, end_descendants
from metaharness.shell.child_process import STDERR_KEPT, ChildStop, kill_group, wait_status
from metaharness.shell.hook_channel import HookChannel
from metaharness.shell.live_engine import Engine
from metaharness.shell.run_signals import listening
from metaharness.shell.steering import Deadlines, steering_command
from metaharness.shell.tree_links import tree_facts

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn


class _Loop:
    """What the engine's handlers keep beside the pure session: the hook channel, the deadline timers, the
    stop, the record's line count and the stderr tail."""

    def __init__(self, session: Session, channel: HookChannel, write_event: Callable[[bytes], None],
                 stopper: ChildStop, cwd: str) -> None:  # fmt: skip
        self.session = session
        self.channel = channel
        self.cwd = cwd
        self.write_event = write_event
        self.deadlines = Deadlines(session.desk.deadline_ms)
        self.stopper = stopper
        self.number = 0
        self.tail = bytearray()
        self.open = {"record", "stderr"}
        self.drained_at: float | None = None

    def perform(self, effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, bytes):
                self.write_event(effect)
            elif isinstance(effect, HookAnswer):
                answer = self.channel.answer(effect.key, effect.body)
                refused = channel_refused(effect.key, answer.failure()) if isinstance(answer, Failure) else None
                self.session, more = answered(self.session, answer.value_or(False), refused)
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

    def exited(self, pid: int) -> None:
        """The child exited: its group is killed and its pipes are read for at most ``PIPE_DRAIN_S``."""
        kill_group(pid, signal.SIGKILL)
        self.drained_at = time.monotonic() + PIPE_DRAIN_S

    def drained(self) -> None:
        self.open.clear()

    def expire_due(self) -> None:
        for call_id, waited in self.deadlines.take_due():
            self.session, effects = expire(self.session, call_id, waited)
            self.perform(effects)

    def signalled(self, _number: int) -> None:
        """A signal: the first abandons every pending call, then the stop policy ends the child."""
        if not self.stopper.killed:
            self.session, effects = abandon_pending(self.session, "the run was interrupted")
            self.perform(effects)
        self.stopper.take("signal")

    def command(self, line: bytes, on_steering_refusal: Callable[[str], None]) -> None:
        command = steering_command(line.removesuffix(b"\n"), on_steering_refusal)
        if command is None:
            return
        self.session, effects, control = take_command(self.session, command, self.deadlines.latency_ms(command))
        self.perform(effects)
        if control is not None:
            self.stopper.take(control)

    def stderr(self, chunk: bytes) -> None:
        self.tail.extend(chunk)
        del self.tail[:-STDERR_KEPT]

    def record(self, raw: bytes, transcript: IO[bytes]) -> None:
        """One record line: kept, read through the session, then the doorbell drained (a hook rings after
        Gemini CLI wrote its call's ``tool_use``, so the line is read first)."""
        line = raw.removesuffix(b"\n")
        transcript.write(line + b"\n")
        transcript.flush()
        self.number += 1
        self.session, effects = read_line(self.session, self.number, line.removesuffix(b"\r"))
        self.perform(effects)
        self.drain_doorbell()


def drive_gemini(
    *,
    launch: GeminiLaunch,
    session: Session,
    channel: HookChannel,
    write_event: Callable[[bytes], None],
    transcript: IO[bytes],
    commands: int | None,
    on_steering_refusal: Callable[[str], None],
    late_events: Callable[[], tuple[Event, ...]] = tuple,
    process_known: bool = True,
    confined: ConfinedSpawn | None = None,
) -> RunEnd:
    """Spawn ``gemini -p`` (in ``confined``'s view when given), read its record and its hooks through the session
    until it ends, wind up. Raises ``OSError`` when the spawn itself fails."""
    child = subprocess.Popen(
        list(launch.argv) if confined is None else confined.argv, cwd=launch.cwd, env=launch.environment.as_dict(),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        pass_fds=() if confined is None else confined.pass_fds,
    )  # fmt: skip
    if confined is not None:
        confined.spawned()
    assert child.stdout is not None and child.stderr is not None
    loop = _Loop(session, channel, write_event, ChildStop(child.pid, STOP_POLICY), launch.cwd)
    engine = Engine()
    try:
        engine.on_exit(child.pid, partial(loop.exited, child.pid))
        engine.on_ready(channel.fileno(), loop.drain_doorbell)
        engine.on_signal(loop.signalled)
        listening(child.pid, engine.signal)
        if commands is not None:
            engine.on_lines(commands, COMMAND_LINE_LIMIT, partial(loop.command, on_steering_refusal=on_steering_refusal),
                            lambda: None)  # fmt: skip
        engine.on_chunks(child.stderr.fileno(), loop.stderr, partial(loop.open.discard, "stderr"))
        on_record = partial(loop.record, transcript=transcript)
        engine.on_lines(child.stdout.fileno(), RECORD_LINE_LIMIT, on_record, partial(loop.open.discard, "record"))
        engine.timer(lambda: loop.stopper.kill_at, lambda: loop.stopper.due(time.monotonic()))
        engine.timer(lambda: loop.drained_at, loop.drained)
        engine.timer(loop.deadlines.next_at, loop.expire_due)
        engine.run(until=lambda: not loop.open)
        loop.drain_doorbell()
        loop.session, effects = end_of_record(loop.session)
        loop.perform(effects)
        code = _reap(child)
    finally:
        engine.close()
    kill_group(child.pid, signal.SIGKILL)
    end_descendants(child.pid)
    process = wait_status(code, process_known)
    stopper = loop.stopper
    loop.session, effects, reason = wind_up(
        loop.session, stderr_tail=bytes(loop.tail), halted=stopper.halted, killed=stopper.killed, process=process,
        late=late_events(),
    )  # fmt: skip
    loop.perform(effects)
    return RunEnd(reason, process)


def _reap(child: subprocess.Popen[bytes]) -> int:
    """The child's wait status once its record has ended: a child that lingers after closing its stdout is
    sent SIGTERM after 5 s and SIGKILL 5 s later."""
    for number in (signal.SIGTERM, signal.SIGKILL):
        try:
            return child.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            kill_group(child.pid, number)
    return child.wait()
