"""The live run loop of a codex run (spec 50 §1 "Processes", §2, §4; spec 10 §4.10).

``codex exec`` runs in its own process group with stdin ``/dev/null``; its ``--json`` stdout is kept
in ``rollout.stdout.jsonl`` and not parsed. The record is the rollout file, polled every 25 ms; the
hook channel's doorbell wakes the loop at once, and is drained before new rollout lines are parsed.
Every decision is the pure session's (``metaharness.pure.codex.session``); this module only moves
bytes, timers and signals in the order its effects say.
"""

from __future__ import annotations

import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

import msgspec

from metaharness.pure.codex.app_server import Note, Perform, Send
from metaharness.pure.codex.launch import CodexLaunch
from metaharness.pure.codex.rollout import RolloutLaunch
from metaharness.pure.codex.session import (
    Control,
    Effect,
    HookAnswer,
    Session,
    abandon_pending,
    delivered,
    end_of_record,
    expire,
    hook_request,
    open_session,
    read_line,
    read_sub_agent,
    take_command,
    wind_up,
)
from metaharness.pure.decisions import AbandonCause, Arm, Desk, Disarm
from metaharness.pure.events import Event, Process
from metaharness.shell.child_process import (
    GRACE_S,
    GroupStop,
    SignalQueue,
    keep_tail,
    kill_group,
    pump_fd,
    wait_status,
)
from metaharness.shell.codex.rollout import POLL_INTERVAL_S, QUIET_POLLS_AFTER_EXIT, RolloutTail, SubAgentRollouts
from metaharness.shell.hook_channel import HookChannel
from metaharness.shell.steering import Deadlines, steering_command

SUB_AGENT_COPIES = "sub-agents"
"""The scratch directory holding the copies of the sub-agents' rollouts."""

"""``interrupt``, ``halt`` and a signal SIGTERM the group, then SIGKILL it 5 s later (spec 50 §1)."""


class LiveOutcome(msgspec.Struct, frozen=True):
    """How a driven codex run ended: the closing reason, the child's status and the stream's length."""

    reason: str
    process: Process
    events: int


def _watch_doorbell(
    fd: int, events: queue.Queue[tuple[str, Any]], drained: threading.Event, stop: threading.Event
) -> None:
    """Wake the loop when the doorbell is readable; wait until the loop has drained it."""
    while not stop.is_set():
        try:
            readable, _, _ = select.select([fd], [], [], 0.2)
        except (OSError, ValueError):
            return
        if readable:
            drained.clear()
            events.put(("ring", None))
            drained.wait(1.0)


def _wait_child(child: subprocess.Popen[bytes], events: queue.Queue[tuple[str, Any]]) -> None:
    events.put(("exited", child.wait()))


class CodexLoop:
    """What the live loop keeps beside the pure session (``metaharness.pure.codex.session``): the hook
    channel, the deadline timers, the sub-agents' rollouts and the children's stdins; it performs the
    session's effects in order."""

    def __init__(self, launch: CodexLaunch, session: Session, write_event: Callable[[bytes], None]) -> None:
        self.session = session
        self.write_event = write_event
        self.deadlines = Deadlines(session.desk.deadline_ms)
        self.channel = HookChannel.create(launch.scratch)
        self.sub_agents = SubAgentRollouts(launch.sessions_dir, os.path.join(launch.scratch, SUB_AGENT_COPIES))
        self.server_in: IO[bytes] | None = None
        self.catalogue_in: IO[bytes] | None = None

    def perform(self, effects: tuple[Effect, ...]) -> None:
        """The session's effects in order; a hook answer or a performed call resumes the session with
        whether it was delivered."""
        for effect in effects:
            if isinstance(effect, bytes):
                self.write_event(effect)
            elif isinstance(effect, HookAnswer):
                self.session, more = delivered(self.session, self.channel.answer(effect.key, effect.body))
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

    def step(self, taken: tuple[Session, tuple[Effect, ...]]) -> None:
        """Take the session an input gave and perform its effects."""
        self.session, effects = taken
        self.perform(effects)

    def ring(self) -> None:
        """Drain the doorbell: each key's request is a call the hook delivered."""
        for key in self.channel.ring():
            self.step(hook_request(self.session, key, self.channel.request(key)))

    def record(self, number: int, raw: bytes) -> None:
        self.ring()
        self.step(read_line(self.session, number, raw))

    def command(self, line: bytes, on_steering_refusal: Callable[[str], None]) -> Control:
        """One ``metaharness.command/1`` line; returns ``interrupt`` or ``halt`` when the child must be stopped."""
        command = steering_command(line, on_steering_refusal)
        if command is None:
            return None
        self.session, effects, control = take_command(self.session, command, self.deadlines.latency_ms(command))
        self.perform(effects)
        return control

    def abandon(self, why: AbandonCause) -> None:
        self.step(abandon_pending(self.session, why))

    def expire_due(self) -> None:
        for call_id, waited in self.deadlines.take_due():
            self.step(expire(self.session, call_id, waited))

    def take_rollout(self, rollout_tail: RolloutTail) -> bool:
        """One poll: the doorbell, then each new rollout line as a record, then each new line of a
        sub-agent's rollout (its calls and their results); whether any line came."""
        self.ring()
        lines = rollout_tail.poll()
        for number, raw in lines:
            self.record(number, raw)
        sub_lines = self.sub_agents.poll(rollout_tail.path)
        for path, number, raw in sub_lines:
            self.ring()
            self.step(read_sub_agent(self.session, path, number, raw))
        return bool(lines or sub_lines)

    def end_stream(self) -> None:
        """The rollout is read to its end: the last rings, then the session's end of record."""
        self.ring()
        self.step(end_of_record(self.session))

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
        return reason


def write_line(stream: IO[bytes] | None, line: bytes) -> bool:
    """Write one line to a child's stdin; whether it was written (a child that has gone is not an
    error of the run)."""
    if stream is None or stream.closed:
        return False
    try:
        stream.write(line)
        stream.flush()
    except (BrokenPipeError, OSError):
        return False
    return True


def drive_codex(
    *,
    launch: CodexLaunch,
    desk: Desk,
    rollout: RolloutLaunch,
    run: str,
    write_event: Callable[[bytes], None],
    commands: int | None,
    on_steering_refusal: Callable[[str], None],
    process_known: bool = True,
    late_events: Callable[[], tuple[Event, ...]] = tuple,
) -> LiveOutcome:
    """Spawn ``codex exec``, map its rollout and decide its hook calls until it ends, then wind the
    stream up (spec 20 §4, spec 10 §4.10). Raises ``OSError`` when the spawn itself fails.
    ``process_known`` false writes ``process`` unknown, as conformance C3 does (spec 50 §9);
    ``late_events`` are the wind-up's own events (loopback, retain), written before the marker."""
    state = CodexLoop(launch, open_session(desk, rollout, run)[0], write_event)
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()
    drained = threading.Event()
    with open(launch.stdout_copy, "wb") as stdout_copy:
        child = subprocess.Popen(
            list(launch.argv),
            cwd=launch.cwd,
            env=launch.environment.as_dict(),
            stdin=subprocess.DEVNULL,
            stdout=stdout_copy,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    assert child.stderr is not None
    signals = SignalQueue(events)
    signals.install()
    tail = bytearray()
    stderr_thread = threading.Thread(target=keep_tail, args=(child.stderr, tail), daemon=True)
    stderr_thread.start()
    threading.Thread(target=_wait_child, args=(child, events), daemon=True).start()
    threading.Thread(target=_watch_doorbell, args=(state.channel.fileno(), events, drained, stop), daemon=True).start()
    if commands is not None:
        threading.Thread(target=pump_fd, args=(commands, "command", events), daemon=True).start()
    rollout_tail = RolloutTail(launch.sessions_dir, launch.rollout_copy)
    group = GroupStop(child.pid)
    exit_code: int | None = None
    quiet = 0
    next_poll = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            waits = [next_poll - now]
            waits += [at - now for at in (state.deadlines.next_at(),) if at is not None]
            if group.kill_at is not None:
                waits.append(group.kill_at - now)
            try:
                kind, item = events.get(timeout=max(0.0, min(waits)))
            except queue.Empty:
                kind, item = "tick", None
            if kind == "ring":
                state.ring()
                drained.set()
            elif kind == "exited":
                exit_code = item
            elif kind == "command" and item is not None:
                control = state.command(item, on_steering_refusal)
                if control is not None:
                    group.control(control)
            elif kind == "signal":
                if group.second_signal():
                    continue
                state.abandon("the run was interrupted")
                group.terminate()
            now = time.monotonic()
            group.due(now)
            state.expire_due()
            if now >= next_poll:
                next_poll = now + POLL_INTERVAL_S
                fresh = state.take_rollout(rollout_tail)
                if exit_code is not None:
                    quiet = 0 if fresh else quiet + 1
                    if quiet >= QUIET_POLLS_AFTER_EXIT:
                        break
        state.end_stream()
        stderr_thread.join(timeout=GRACE_S)
    finally:
        stop.set()
        drained.set()
        signals.restore()
        rollout_tail.close()
    kill_group(child.pid, signal.SIGKILL)
    code = exit_code if exit_code is not None else child.wait()
    process = wait_status(code)
    marked = process if process_known else wait_status(code, known=False)
    reason = state.close(halted=group.halted, killed=group.killed, tail=bytes(tail), late_events=late_events, process=marked)
    return LiveOutcome(reason, process, state.session.stream.written)
