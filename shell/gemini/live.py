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

from metaharness.pure.bounds import RECORD_LINE_LIMIT
from metaharness.pure.budgets import PIPE_DRAIN_S
from metaharness.pure.decisions import Arm, Disarm
from metaharness.pure.events import Event, EventValue
from metaharness.pure.gemini.launch import GeminiLaunch
from metaharness.pure.gemini.session import (
    STEPS,
    STOP_POLICY,
    Effect,
    Session,
    answered,
    hook_request,
    read_line,
    request_subjects,
    wind_up,
    with_version,
)
from metaharness.pure.hook_channel import HookAnswer, channel_refused
from metaharness.pure.run_end import RunEnd
from metaharness.shell.child_process import ChildStop, kill_group
from metaharness.shell.gemini.version_probe import VersionProbe
from metaharness.shell.hook_channel import HookChannel
from metaharness.shell.live_engine import Engine, Handler, LiveLoop, ended, read_rest, reap, spawn
from metaharness.shell.tree_links import tree_facts

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn




class _Loop(LiveLoop[Session, Effect]):
    """Beside the shared loop state: the hook channel, the record's line count, which pipes are open, and while a
    version probe beside the spawn has not answered, the record lines kept unread and the paused doorbell."""

    def __init__(self, session: Session, channel: HookChannel, write_event: Callable[[EventValue], None],
                 stopper: ChildStop, cwd: str) -> None:  # fmt: skip
        super().__init__(STEPS, session.desk.deadline_ms)
        self.session = session
        self.channel = channel
        self.cwd = cwd
        self.write_event = write_event
        self.stopper = stopper
        self.number = 0
        self.open = {"record", "stderr"}
        self.drained_at: float | None = None
        self.probe: VersionProbe | None = None
        self.unread: list[tuple[int, bytes]] = []
        self.resume_doorbell: Handler = lambda: None

    def perform(self, effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, EventValue):
                self.write_event(effect)
            elif isinstance(effect, HookAnswer):
                answer = self.channel.answer(effect.key, effect.body)
                refused = channel_refused(effect.key, answer.failure()) if isinstance(answer, Failure) else None
                self.step(answered(self.session, answer.value_or(False), refused))
            elif isinstance(effect, Arm):
                self.deadlines.arm(effect.call_id)
            elif isinstance(effect, Disarm):
                self.deadlines.disarm(effect.call_id)

    def drain_doorbell(self) -> None:
        for key in self.channel.ring():
            raw = self.channel.request(key)
            tree = tree_facts(request_subjects(self.session, key, raw), self.cwd) if raw is not None else None
            self.step(hook_request(self.session, key, raw, tree))

    def exited(self, pid: int) -> None:
        """The child exited: its group is killed and its pipes are read for at most ``PIPE_DRAIN_S``."""
        kill_group(pid, signal.SIGKILL)
        self.drained_at = time.monotonic() + PIPE_DRAIN_S

    def drained(self) -> None:
        self.open.clear()

    def record(self, raw: bytes, transcript: IO[bytes]) -> None:
        """One record line: kept, read through the session, then the doorbell drained (a hook rings after
        Gemini CLI wrote its call's ``tool_use``, so the line is read first)."""
        line = raw.removesuffix(b"\n")
        transcript.write(line + b"\n")
        transcript.flush()
        self.number += 1
        if self.probe is not None:
            self.unread.append((self.number, line))
            return
        self.step(read_line(self.session, self.number, line.removesuffix(b"\r")))
        self.drain_doorbell()

    def watch_probe(self, engine: Engine, probe: VersionProbe) -> None:
        """Until ``probe`` answers (or outlives its budget) no record line is read and the doorbell is paused, so
        ``session.started`` states its version."""
        self.probe = probe
        self.resume_doorbell = engine.pause(self.channel.fileno())
        engine.on_chunks(probe.fileno(), probe.feed, partial(self.probe_answered, True))

        def outlived() -> None:
            engine.forget(probe.fileno())
            self.probe_answered(False)

        engine.timer(lambda: None if self.probe is None else probe.due, outlived)

    def settle_probe(self) -> None:
        """After the loop: a probe that has not answered is read to its end within what is left of its budget."""
        if self.probe is not None:
            probe = self.probe
            probe.feed(read_rest(probe.fileno(), max(0.0, probe.due - time.monotonic())))
            self.probe_answered(time.monotonic() < probe.due)

    def probe_answered(self, ended: bool) -> None:
        """The session takes the version, then the lines kept unread, then the doorbell."""
        assert self.probe is not None
        self.session = with_version(self.session, self.probe.answer(ended))
        self.probe = None
        self.resume_doorbell()
        for number, line in self.unread:
            self.step(read_line(self.session, number, line.removesuffix(b"\r")))
        self.unread.clear()
        self.drain_doorbell()


def drive_gemini(
    *,
    launch: GeminiLaunch,
    session: Session,
    channel: HookChannel,
    write_event: Callable[[EventValue], None],
    transcript: IO[bytes],
    commands: int | None,
    on_steering_refusal: Callable[[str], None],
    late_events: Callable[[], tuple[Event, ...]] = tuple,
    process_known: bool = True,
    confined: ConfinedSpawn | None = None,
    probe: Callable[[], VersionProbe | None] | None = None,
) -> RunEnd:
    """Spawn ``gemini -p`` (in ``confined``'s view when given), start ``probe`` beside it, read its record and its
    hooks through the session until it ends, wind up. Raises ``OSError`` when the spawn itself fails."""
    child = spawn(launch.argv, cwd=launch.cwd, env=launch.environment.as_dict(), stdin=subprocess.DEVNULL,
                  stdout=subprocess.PIPE, confined=confined)  # fmt: skip
    started = None if probe is None else probe()
    assert child.stdout is not None and child.stderr is not None
    loop = _Loop(session, channel, write_event, ChildStop(child.pid, STOP_POLICY), launch.cwd)
    engine = Engine()
    try:
        engine.on_exit(child.pid, partial(loop.exited, child.pid))
        engine.on_ready(channel.fileno(), loop.drain_doorbell)
        loop.watch_outside(engine, child.pid, commands, on_steering_refusal)
        engine.on_chunks(child.stderr.fileno(), loop.stderr, partial(loop.open.discard, "stderr"))
        on_record = partial(loop.record, transcript=transcript)
        engine.on_lines(child.stdout.fileno(), RECORD_LINE_LIMIT, on_record, partial(loop.open.discard, "record"))
        if started is not None:
            loop.watch_probe(engine, started)
        loop.watch_timers(engine)
        engine.timer(lambda: loop.drained_at, loop.drained)
        engine.run(until=lambda: not loop.open)
        loop.settle_probe()
        loop.drain_doorbell()
        loop.end_of_record()
        code = reap(child)
    finally:
        if loop.probe is not None:
            loop.probe.answer(False)
        engine.close()
    process = ended(child.pid, code, process_known)
    stopper = loop.stopper
    loop.session, effects, reason = wind_up(
        loop.session, stderr_tail=bytes(loop.tail), halted=stopper.halted, killed=stopper.killed, process=process,
        late=late_events(),
    )  # fmt: skip
    loop.perform(effects)
    return RunEnd(reason, process)
