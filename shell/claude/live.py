"""The live run loop of a claude run: the engine's readiness loop (``metaharness.shell.live_engine``)
over the CLI's stdout (its record and its control requests), metaharness's own stdin and its signals — no
polling interval (docs/adapters/claude.md#in-band-decisions; docs/adapters/common.md#vendor-launch-order;
docs/events.md#wind-up-and-signals).

The child runs in its own process group with its stdin a pipe only metaharness writes; each stdout line is
appended to the retained transcript before it is parsed; the last 64 KiB of stderr are kept. Every
decision is the pure session's (``metaharness.pure.claude.session``); this module only moves lines and
signals in the order its effects say.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import IO, TYPE_CHECKING

from metaharness.pure.bounds import RECORD_LINE_LIMIT
from metaharness.pure.budgets import PIPE_DRAIN_S, SEND_WAIT_S
from metaharness.pure.claude.session import (
    STEPS,
    STOP_POLICY,
    Effect,
    EndInput,
    Refuse,
    Session,
    ToChild,
    callback_subjects,
    read_line,
    wind_up,
    write_events,
)
from metaharness.pure.decisions import Arm, Disarm
from metaharness.pure.events import Event, EventValue
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_end import RunEnd
from metaharness.shell.child_process import ChildStop, kill_group
from metaharness.shell.live_engine import Engine, LiveLoop, ended, reap, spawn
from metaharness.shell.tree_links import tree_facts

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn





class _Loop(LiveLoop[Session, Effect]):
    """Beside the shared loop state: the CLI's stdin, the record's line count, which pipes are open and the
    refusal when the CLI did not confirm its hooks."""

    def __init__(
        self, session: Session, to_child: int, write_event: Callable[[EventValue], None], stopper: ChildStop, cwd: str
    ) -> None:
        super().__init__(STEPS, session.desk.deadline_ms)
        self.session = session
        self.to_child: int | None = to_child
        self.cwd = cwd
        self.write_event = write_event
        self.stopper = stopper
        self.number = 0
        self.open = {"record", "stderr"}
        self.drained_at: float | None = None
        self.refusal: Refusal | None = None

    def perform(self, effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, EventValue):
                self.write_event(effect)
            elif isinstance(effect, ToChild):
                self.send(effect.line)
            elif isinstance(effect, EndInput):
                self.end_input()
            elif isinstance(effect, Refuse):
                self.refusal = effect.refusal
                kill_group(self.stopper.pid, signal.SIGKILL)
                self.end_input()
            elif isinstance(effect, Arm):
                self.deadlines.arm(effect.call_id)
            elif isinstance(effect, Disarm):
                self.deadlines.disarm(effect.call_id)

    def send(self, line: bytes) -> None:
        """One line to the CLI's stdin, whole. A CLI that has closed it, or that reads none of it for
        ``SEND_WAIT_S`` (stopped, say), gets nothing more: its stdin is closed, so an unanswered call is
        refused at the CLI's own timeout and the run is never held by a write."""
        view = memoryview(line)
        while view and self.to_child is not None:
            try:
                view = view[os.write(self.to_child, view) :]
            except BlockingIOError:
                if not select.select([], [self.to_child], [], SEND_WAIT_S)[1]:
                    self.end_input()
            except OSError:
                self.end_input()

    def end_input(self) -> None:
        if self.to_child is not None:
            os.close(self.to_child)
            self.to_child = None

    def exited(self, pid: int) -> None:
        """The child exited: its group is killed and its pipes are read for at most ``PIPE_DRAIN_S``."""
        kill_group(pid, signal.SIGKILL)
        self.drained_at = time.monotonic() + PIPE_DRAIN_S

    def drained(self) -> None:
        self.open.clear()

    def watch_child(self, engine: Engine, child: subprocess.Popen[bytes], transcript: IO[bytes]) -> None:
        """The CLI's stderr and stdout (its record), then the timers and the pipes' drain after its exit."""
        assert child.stdout is not None and child.stderr is not None
        engine.on_chunks(child.stderr.fileno(), self.stderr, partial(self.open.discard, "stderr"))
        on_record = partial(self.record, transcript=transcript)
        engine.on_lines(child.stdout.fileno(), RECORD_LINE_LIMIT, on_record, partial(self.open.discard, "record"))
        self.watch_timers(engine)
        engine.timer(lambda: self.drained_at, self.drained)

    def alert(self, fd: int, events: Callable[[], tuple[Event, ...]]) -> None:
        os.read(fd, 64)
        self.step(write_events(self.session, events()))

    def record(self, raw: bytes, transcript: IO[bytes]) -> None:
        """One stdout line: kept, then read through the session (a ``hook_callback`` with the links its
        subjects pass through)."""
        line = raw.removesuffix(b"\n")
        transcript.write(line + b"\n")
        transcript.flush()
        self.number += 1
        line = line.removesuffix(b"\r")
        subjects = callback_subjects(self.session, line)
        tree = tree_facts(subjects, self.cwd) if subjects else None
        self.step(read_line(self.session, self.number, line, tree))


def drive_claude(
    *,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    session: Session,
    opening: tuple[Effect, ...],
    write_event: Callable[[EventValue], None],
    transcript: IO[bytes],
    commands: int | None,
    on_steering_refusal: Callable[[str], None],
    late_events: Callable[[], tuple[Event, ...]] = lambda: (),
    process_known: bool = True,
    alerts: tuple[int, Callable[[], tuple[Event, ...]]] | None = None,
    confined: ConfinedSpawn | None = None,
) -> RunEnd:
    """Spawn Claude Code, perform the session's ``opening`` effects (``initialize`` to its stdin), read its
    stdout through the session until it ends, wind up.

    ``commands`` is the descriptor of metaharness's own stdin (``None``: no commands);
    ``alerts`` is a descriptor that becomes readable when events arise outside the record (the loopback
    proxy's ``auth.expired``) and the callable that hands them over; ``process_known`` false writes ``process`` unknown
    (conformance C3's scripted child, docs/adapters/claude.md#conformance-vectors); ``late_events`` runs once the child
    is reaped (the proxy's ``auth.expired`` and ``LOOPBACK_REFUSED``, ``RETAIN_FAILED``); ``confined`` runs ``argv`` in
    its view instead. Raises ``OSError`` when the spawn itself fails.
    """
    child = spawn(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, confined=confined)
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    to_child = os.dup(child.stdin.fileno())
    child.stdin.close()
    os.set_blocking(to_child, False)
    loop = _Loop(session, to_child, write_event, ChildStop(child.pid, STOP_POLICY), cwd)
    engine = Engine()
    try:
        engine.on_exit(child.pid, partial(loop.exited, child.pid))
        if alerts is not None:
            engine.on_ready(alerts[0], partial(loop.alert, alerts[0], alerts[1]))
        loop.watch_outside(engine, child.pid, commands, on_steering_refusal)
        loop.watch_child(engine, child, transcript)
        loop.perform(opening)
        engine.run(until=lambda: not loop.open)
        if loop.refusal is None:
            loop.end_of_record()
        code = reap(child)
    finally:
        engine.close()
        loop.end_input()
    process = ended(child.pid, code, process_known)
    if loop.refusal is not None:
        return RunEnd("refused", process, loop.refusal)
    stopper = loop.stopper
    loop.session, effects, reason = wind_up(
        loop.session, stderr_tail=bytes(loop.tail), halted=stopper.halted, killed=stopper.killed,
        process=process, late=late_events(),
    )  # fmt: skip
    loop.perform(effects)
    return RunEnd(reason, process)
