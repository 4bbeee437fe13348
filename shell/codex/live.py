"""The live run loop of a codex run (docs/adapters/common.md#vendor-launch-order, #vendor-decisions;
docs/adapters/codex.md; docs/events.md#wind-up-and-signals).

``codex exec`` runs in its own process group with stdin ``/dev/null``; its ``--json`` stdout is kept
in ``rollout.stdout.jsonl`` and not parsed. The record is the rollout file, polled every 25 ms; the
hook channel's doorbell wakes the loop at once, and is drained before new rollout lines are parsed.
Every decision is the pure session's (``metaharness.pure.codex.session``); this module only moves
bytes, timers and signals in the order its effects say.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import IO, TYPE_CHECKING

from returns.result import Failure

from metaharness.pure.budgets import PIPE_DRAIN_S, ROLLOUT_POLL_S
from metaharness.pure.codex.app_server import Note, Perform, Send
from metaharness.pure.codex.launch import CodexLaunch
from metaharness.pure.codex.rollout import RolloutLaunch
from metaharness.pure.codex.session import (
    STEPS,
    STOP_POLICY,
    Effect,
    Session,
    delivered,
    hook_request,
    named_agents,
    open_session,
    read_line,
    read_sub_agent,
    request_subjects,
    wind_up,
)
from metaharness.pure.decisions import Arm, Desk, Disarm
from metaharness.pure.events import Event, EventValue, Process
from metaharness.pure.hook_channel import HookAnswer, channel_refused
from metaharness.pure.run_end import RunEnd
from metaharness.shell.child_process import (
    ChildStop,
    kill_group,
)
from metaharness.shell.child_tree import ChildDir
from metaharness.shell.codex.rollout import QUIET_POLLS_AFTER_EXIT, RolloutTail, SubAgentRollouts
from metaharness.shell.hook_channel import HookChannel
from metaharness.shell.live_engine import Engine, LiveLoop, ended, read_rest, spawn
from metaharness.shell.tree_links import tree_facts

SUB_AGENT_COPIES = "sub-agents"
"""The scratch directory holding the copies of the sub-agents' rollouts."""

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn




class CodexLoop(LiveLoop[Session, Effect]):
    """What the live loop keeps beside the pure session (``metaharness.pure.codex.session``) and the shared loop
    state: the hook channel, the sub-agents' rollouts and the children's stdins; it performs the session's
    effects in order."""

    def __init__(self, launch: CodexLaunch, session: Session, write_event: Callable[[EventValue], None]) -> None:
        super().__init__(STEPS, session.desk.deadline_ms)
        self.cwd = launch.cwd
        self.session = session
        self.write_event = write_event
        self.channel = HookChannel.create(launch.scratch)
        self.home = ChildDir.open(launch.codex_home)
        self.scratch = ChildDir.open(launch.scratch)
        self.sub_agents = SubAgentRollouts(self.home, self.scratch, SUB_AGENT_COPIES)
        self.server_in: IO[bytes] | None = None
        self.catalogue_in: IO[bytes] | None = None
        self.exit_code: int | None = None
        self.next_poll = time.monotonic()
        self.quiet = 0
        self.group_gone = False
        self.rollout_ended = False

    def rollout_tail(self, launch: CodexLaunch) -> RolloutTail:
        """The main rollout's tail, its copy made new before the spawn (raises ``OSError``)."""
        return RolloutTail.made(self.home, self.scratch, os.path.basename(launch.rollout_copy))

    def new_copy(self, path: str) -> IO[bytes]:
        """A new file of the scratch root for a copy the run keeps, made before the spawn (raises ``OSError``)."""
        made = self.scratch.create(os.path.basename(path))
        if isinstance(made, Failure):
            raise OSError(made.failure().message)
        return os.fdopen(made.unwrap(), "wb")

    def perform(self, effects: tuple[Effect, ...]) -> None:
        """The session's effects in order; a hook answer or a performed call resumes the session with
        whether it was delivered."""
        for effect in effects:
            if isinstance(effect, EventValue):
                self.write_event(effect)
            elif isinstance(effect, HookAnswer):
                answer = self.channel.answer(effect.key, effect.body)
                refused = channel_refused(effect.key, answer.failure()) if isinstance(answer, Failure) else None
                self.session, more = delivered(self.session, answer.value_or(False), refused)
                self.perform(more)
            elif isinstance(effect, Perform):
                self.session, more = delivered(self.session, write_line(self.catalogue_in, effect.line))
                self.perform(more)
            elif isinstance(effect, Send):
                write_line(self.server_in, effect.line)
            elif isinstance(effect, Note):
                sys.stderr.write(f"metaharness: {effect.text}\n")
                sys.stderr.flush()
            elif isinstance(effect, Arm):
                self.deadlines.arm(effect.call_id)
            elif isinstance(effect, Disarm):
                self.deadlines.disarm(effect.call_id)

    def ring(self) -> None:
        """Drain the doorbell: each key's request is a call the hook delivered."""
        for key in self.channel.ring():
            raw = self.channel.request(key)
            tree = tree_facts(request_subjects(key, raw), self.cwd) if raw is not None else None
            self.step(hook_request(self.session, key, raw, tree))

    def record(self, number: int, raw: bytes) -> None:
        self.ring()
        self.step(read_line(self.session, number, raw))

    def exited(self, child: subprocess.Popen[bytes], kill: bool) -> None:
        """The child exited. With ``kill`` its group is killed then, so nothing of it is left to write the
        rollout: it is polled at once and read to its end; otherwise it is read until it is quiet."""
        if kill:
            kill_group(child.pid, signal.SIGKILL)
            self.next_poll = time.monotonic()
        self.group_gone = kill
        self.exit_code = child.wait()
        self.next_poll = time.monotonic()

    def poll(self, rollout_tail: RolloutTail) -> None:
        """The rollout's poll, every ``ROLLOUT_POLL_S``; once the child has exited, the rollout has
        ended at the first poll when its group is gone, else after ``QUIET_POLLS_AFTER_EXIT`` polls that
        found nothing new."""
        self.next_poll = time.monotonic() + ROLLOUT_POLL_S
        fresh = self.take_rollout(rollout_tail)
        if self.exit_code is not None:
            self.quiet = 0 if fresh else self.quiet + 1
            self.rollout_ended = self.group_gone or self.quiet >= QUIET_POLLS_AFTER_EXIT

    def watch(
        self,
        engine: Engine,
        child: subprocess.Popen[bytes],
        commands: int | None,
        on_steering_refusal: Callable[[str], None],
    ) -> None:
        """The sources every codex run watches, the doorbell first, and its timers."""
        assert child.stderr is not None
        engine.on_ready(self.channel.fileno(), self.ring)
        self.watch_outside(engine, child.pid, commands, on_steering_refusal)
        engine.on_chunks(child.stderr.fileno(), self.stderr, lambda: None)
        self.watch_timers(engine)

    def take_rollout(self, rollout_tail: RolloutTail) -> bool:
        """One poll: the doorbell, then each new rollout line as a record, then each new line of a
        sub-agent's rollout (its calls and their results); whether any line came."""
        self.ring()
        lines = rollout_tail.poll()
        for number, raw in lines:
            self.record(number, raw)
        sub_lines = self.sub_agents.poll(rollout_tail.path, named_agents(self.session))
        for path, number, raw in sub_lines:
            self.ring()
            self.step(read_sub_agent(self.session, path, number, raw))
        return bool(lines or sub_lines)

    def end_stream(self) -> None:
        """The rollout is read to its end: the last rings, then the session's end of record."""
        self.ring()
        self.end_of_record()

    def close(
        self, *, halted: bool, killed: bool, tail: bytes, late_events: Callable[[], tuple[Event, ...]], process: Process
    ) -> str:
        """Wind the stream up (the session's closing records) and release the channel; the reason."""
        self.session, effects, reason = wind_up(
            self.session, stderr_tail=tail, halted=halted, killed=killed, process=process, late=late_events()
        )
        self.perform(effects)
        self.channel.close()
        self.sub_agents.close()
        self.home.close()
        self.scratch.close()
        return reason


def write_line(stream: IO[bytes] | None, line: bytes) -> bool:
    """Write one line to a child's stdin; whether it was written (a child that has gone is not an
    error of the run)."""
    if stream is None or stream.closed:
        return False
    try:
        stream.write(line)
        stream.flush()
    except OSError:
        return False
    return True


def drive_codex(
    *,
    launch: CodexLaunch,
    desk: Desk,
    rollout: RolloutLaunch,
    run: str,
    write_event: Callable[[EventValue], None],
    commands: int | None,
    on_steering_refusal: Callable[[str], None],
    process_known: bool = True,
    late_events: Callable[[], tuple[Event, ...]] = tuple,
    confined: ConfinedSpawn | None = None,
) -> RunEnd:
    """Spawn ``codex exec`` (in ``confined``'s view when given), map its rollout and decide its hook calls until it ends, then wind the
    stream up (docs/events.md#stream-ending, docs/events.md#wind-up-and-signals). Raises ``OSError`` when the spawn
    itself fails. ``process_known`` false writes ``process`` unknown, as conformance C3 does
    (docs/adapters/codex.md#conformance-vectors); ``late_events`` are the wind-up's own events (loopback, retain),
    written before the marker."""
    state = CodexLoop(launch, open_session(desk, rollout, run, tree_facts((), launch.cwd))[0], write_event)
    rollout_tail = state.rollout_tail(launch)
    with state.new_copy(launch.stdout_copy) as stdout_copy:
        child = spawn(launch.argv, cwd=launch.cwd, env=launch.environment.as_dict(), stdin=subprocess.DEVNULL,
                      stdout=stdout_copy, confined=confined)  # fmt: skip
    assert child.stderr is not None
    state.stopper = ChildStop(child.pid, STOP_POLICY)
    engine = Engine()
    try:
        state.watch(engine, child, commands, on_steering_refusal)
        engine.on_exit(child.pid, partial(state.exited, child, True))
        engine.timer(lambda: state.next_poll, partial(state.poll, rollout_tail))
        engine.run(until=lambda: state.rollout_ended)
        state.end_stream()
        state.stderr(read_rest(child.stderr.fileno(), PIPE_DRAIN_S))
    finally:
        engine.close()
        rollout_tail.close()
    code = state.exit_code if state.exit_code is not None else child.wait()
    process = ended(child.pid, code, process_known)
    stopper = state.stopper
    reason = state.close(
        halted=stopper.halted, killed=stopper.killed, tail=bytes(state.tail), late_events=late_events, process=process
    )
    return RunEnd(reason, process)
