"""The live run loop of a b10x run (docs/adapters/b10x.md#process-wiring, #caller-seam;
docs/events.md#wind-up-and-signals).

The loop runs in its own process group. Its stdout is read line by line, each line appended to the
retained transcript and then handed to the pure seam; answer lines go to its stdin; commands arrive
on metaharness's own stdin; deadlines are timers on the main thread. Every decision is the seam's:
this module only moves bytes and signals in the order the seam's effects say.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import IO, TYPE_CHECKING

from metaharness.pure.b10x.seam import (
    STEPS,
    STOP_POLICY,
    AnswerLine,
    Effect,
    SeamSettings,
    SeamState,
    line_subjects,
    open_seam,
    read_line,
    wind_up,
)
from metaharness.pure.bounds import RECORD_LINE_LIMIT
from metaharness.pure.budgets import PIPE_DRAIN_S
from metaharness.pure.decisions import Arm
from metaharness.pure.events import EventValue, StreamClosed, WarningRaised
from metaharness.pure.run_end import RunEnd
from metaharness.shell.child_end import end_descendants
from metaharness.shell.child_process import ChildStop, kill_group
from metaharness.shell.live_engine import Engine, LiveLoop, ended, read_rest, spawn
from metaharness.shell.tree_links import tree_facts

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn


def drive_loop(
    *,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    settings: SeamSettings,
    opening: Callable[[SeamSettings], tuple[SeamSettings, tuple[WarningRaised, ...]]],
    write_event: Callable[[EventValue], None],
    transcript: IO[bytes] | None,
    commands: int | None,
    on_steering_refusal: Callable[[str], None],
    answers_copy: IO[bytes] | None = None,
    retain: Callable[[], tuple[WarningRaised, ...]] | None = None,
    process_known: bool = True,
    confined: ConfinedSpawn | None = None,
) -> RunEnd:
    """Spawn the loop, read its record through the seam until it ends, and wind the stream up.

    ``opening`` runs once the child is spawned and before its first record line is read: it completes
    ``settings`` (the probed version) and gives the plan-time warnings that open the stream, so a
    version probe may run while the loop starts.

    ``write_event`` receives each event value; ``transcript`` every stdout byte of the child;
    ``commands`` is the descriptor of metaharness's own stdin (``None``: no commands); ``answers_copy`` receives each
    answer line too (conformance C3); ``retain`` runs once the child is reaped and returns its
    ``RETAIN_FAILED`` warnings; ``process_known`` false records ``process`` unknown (conformance C3,
    whose scripted child is not the harness); ``confined`` runs ``argv`` in its view instead. Raises
    ``OSError`` when the spawn itself fails.
    """
    answering = settings.mode != "observe"
    stdin = subprocess.PIPE if answering else subprocess.DEVNULL
    child = spawn(argv, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE, confined=confined)
    assert child.stdout is not None and child.stderr is not None
    loop = _Loop(child, settings, write_event, transcript, answers_copy, partial(_signal_child, child, confined), cwd)
    engine = Engine()
    try:
        loop.watch_outside(engine, child.pid, commands, on_steering_refusal)
        loop.watch_child(engine)
        loop.step(open_seam(*opening(settings)))
        engine.run(until=lambda: "record" not in loop.open)
        loop.end_of_record()
    finally:
        engine.close()
        _close_stdin(child)
    code = child.wait()
    if "stderr" in loop.open:
        loop.stderr(read_rest(child.stderr.fileno(), PIPE_DRAIN_S))
    process = ended(child.pid, code, process_known)
    late = retain() if retain is not None else ()
    stopper = loop.stopper
    loop.session, effects = wind_up(
        loop.session, stderr_tail=bytes(loop.tail), halted=stopper.halted, killed=stopper.killed, process=process,
        warnings=late,
    )  # fmt: skip
    loop.perform(effects)
    return RunEnd(closing_reason_of(effects), process)




class _Loop(LiveLoop[SeamState, Effect]):
    """Beside the shared loop state: the child's stdin, the record's line count and which pipes are open."""

    def __init__(
        self,
        child: subprocess.Popen[bytes],
        settings: SeamSettings,
        write_event: Callable[[EventValue], None],
        transcript: IO[bytes] | None,
        answers_copy: IO[bytes] | None,
        signal_child: Callable[[int], None],
        cwd: str,
    ) -> None:
        super().__init__(STEPS, settings.deadline_ms)
        self.child = child
        self.write_event = write_event
        self.transcript = transcript
        self.answers_copy = answers_copy
        self.stopper = ChildStop(child.pid, STOP_POLICY, signal_child)
        self.cwd = cwd
        self.drained_at: float | None = None
        self.number = 0
        self.open = {"record", "stderr"}

    def perform(self, effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, EventValue):
                self.write_event(effect)
            elif isinstance(effect, AnswerLine):
                if self.answers_copy is not None:
                    self.answers_copy.write(effect.line)
                    self.answers_copy.flush()
                self.deadlines.disarm(effect.call_id)
                if self.child.stdin is not None:
                    try:
                        self.child.stdin.write(effect.line)
                        self.child.stdin.flush()
                    except (BrokenPipeError, ValueError):
                        pass
            elif isinstance(effect, Arm):
                self.deadlines.arm(effect.call_id)

    def watch_child(self, engine: Engine) -> None:
        """The loop's stderr, its stdout (the record) and its exit, then the timers and the pipes' drain."""
        assert self.child.stdout is not None and self.child.stderr is not None
        engine.on_chunks(self.child.stderr.fileno(), self.stderr, partial(self.open.discard, "stderr"))
        engine.on_lines(self.child.stdout.fileno(), RECORD_LINE_LIMIT, self.record, partial(self.open.discard, "record"))
        engine.on_exit(self.child.pid, self.exited)
        self.watch_timers(engine)
        engine.timer(lambda: self.drained_at, partial(self.open.discard, "record"))

    def record(self, item: bytes) -> None:
        """One stdout line: kept as read, then read through the seam."""
        if self.transcript is not None:
            self.transcript.write(item)
            self.transcript.flush()
        self.number += 1
        line = item.removesuffix(b"\n")
        subjects = line_subjects(line) if b"tool-requested" in line else ()
        self.step(read_line(self.session, self.number, line, tree_facts(subjects, self.cwd) if subjects else None))

    def exited(self) -> None:
        """The child exited: its group is killed (and every orphan ended); its pipes are read for at
        most ``PIPE_DRAIN_S``, and a SIGKILL still due is not sent."""
        kill_group(self.child.pid, signal.SIGKILL)
        end_descendants(self.child.pid)
        self.drained_at = time.monotonic() + PIPE_DRAIN_S
        self.stopper.kill_at = None


def _signal_child(child: subprocess.Popen[bytes], confined: ConfinedSpawn | None, number: int) -> None:
    """Signal the loop alone (in a confined view, the view's init, which forwards it); one already
    gone is not an error."""
    try:
        if confined is None:
            child.send_signal(number)
        else:
            confined.signal(child.pid, number)
    except ProcessLookupError:
        pass


def _close_stdin(child: subprocess.Popen[bytes]) -> None:
    """The loop's stdin closed, once the record ended (one already broken is not an error)."""
    if child.stdin is not None:
        try:
            child.stdin.close()
        except OSError:
            pass


def closing_reason_of(effects: tuple[Effect, ...]) -> str:
    """The ``reason`` of the ``stream.closed`` event among a wind-up's effects."""
    closed = next(e.payload for e in reversed(effects) if isinstance(e, EventValue))
    assert isinstance(closed, StreamClosed)
    return closed.reason
