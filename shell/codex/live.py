"""The live run loop of a codex run (docs/adapters/common.md#vendor-launch-order, #vendor-decisions;
docs/adapters/codex.md; docs/events.md#wind-up-and-signals).

``codex exec`` runs in its own process group with stdin ``/dev/null``; its ``--json`` stdout is kept
in ``rollout.stdout.jsonl`` and not parsed. The record is the rollout file, polled every 25 ms; the
hook channel's doorbell wakes the loop at once, and is drained before new rollout lines are parsed.
Every decision is the decision desk's (``metaharness.pure.decisions``) and every mapping the codex
seam's; this module only moves bytes, timers and signals in the order their effects say.
"""

from __future__ import annotations

import os
import queue
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from metaharness.pure.capabilities import HONOURED_COMMANDS
from metaharness.pure.census import ZERO_CENSUS, count_decision
from metaharness.pure.codex.launch import CodexLaunch
from metaharness.pure.codex.rendering import resolve_call
from metaharness.pure.codex.replay import stop_word
from metaharness.pure.codex.rollout import (
    RolloutLaunch,
    RolloutReader,
    read_rollout_line,
    read_sub_agent_line,
    session_ended,
)
from metaharness.pure.codex.seam import answer_body, check_replacement, denied_result, presented_call
from metaharness.pure.commands import (
    Halt,
    Interrupt,
    ToolDecide,
    check_supported,
    check_well_formed,
    command_ok,
    command_refused,
)
from metaharness.pure.correlation import Correlator, Output, on_hook_call, on_readings, on_stream_end
from metaharness.pure.decisions import (
    AbandonCause,
    Answer,
    Arm,
    Desk,
    Disarm,
    Effect,
    Emit,
    abandon,
    decide,
    expire,
    present,
)
from metaharness.pure.events import (
    Deny,
    Event,
    Process,
    Replace,
    SessionStarted,
    Stream,
    ToolDecided,
    ToolResult,
    TurnEnded,
    WarningRaised,
    closing_marker,
    result_unobserved,
    stamp,
)
from metaharness.pure.hook_channel import HOOK_GAVE_UP, read_hook_request
from metaharness.pure.readings import Emitted
from metaharness.pure.run_stages import closing_reason, no_terminal_record
from metaharness.shell.child_end import PIPE_DRAIN_S, end_descendants
from metaharness.shell.child_process import (
    GroupStop,
    SignalQueue,
    keep_tail,
    kill_group,
    pump_fd,
    wait_status,
)
from metaharness.shell.codex.rollout import POLL_INTERVAL_S, QUIET_POLLS_AFTER_EXIT, RolloutTail, SubAgentRollouts
from metaharness.shell.hook_channel import HookChannel
from metaharness.shell.run_signals import listening
from metaharness.shell.steering import Deadlines, steering_command
from metaharness.shell.tree_links import tree_facts

SUB_AGENT_COPIES = "sub-agents"
"""The scratch directory holding the copies of the sub-agents' rollouts."""

"""``interrupt``, ``halt`` and a signal SIGTERM the group, then SIGKILL it 5 s later
(docs/adapters/common.md#vendor-launch-order)."""

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn


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


class _Run:
    """The mutable shell of one live run: stream, desk, reader and correlator threaded through."""

    def __init__(
        self,
        launch: CodexLaunch,
        desk: Desk,
        rollout: RolloutLaunch,
        run: str,
        write_event: Callable[[bytes], None],
    ) -> None:
        self.launch = launch
        self.desk = desk
        self.reader = RolloutReader(launch=rollout)
        self.correlator = Correlator(live=True)
        self.stream = Stream(run)
        self.write_event = write_event
        self.keys: dict[str, str] = {}
        self.names: dict[str, str] = {}
        self.deadlines = Deadlines(desk.deadline_ms)
        self.unanswered: set[str] = set()
        self.census = ZERO_CENSUS
        self.channel = HookChannel.create(launch.scratch)
        self.sub_agents = SubAgentRollouts(launch.sessions_dir, os.path.join(launch.scratch, SUB_AGENT_COPIES))
        self.sub_readers: dict[str, RolloutReader] = {}
        self.session_cwd: str | None = None

    def emit(self, payload: Event, at: Any = msgspec.UNSET) -> None:
        if isinstance(payload, ToolResult):
            payload = denied_result(self.desk, payload)
        if isinstance(payload, SessionStarted):
            self.session_cwd = payload.cwd
        if isinstance(payload, ToolDecided):
            if payload.call_id in self.unanswered:
                self.unanswered.discard(payload.call_id)
                payload = msgspec.structs.replace(payload, decision=Deny(HOOK_GAVE_UP), decided_by="deadline")
            self.census = count_decision(self.census, payload)
        self.stream, line = stamp(self.stream, payload, at)
        self.write_event(line)

    def perform(self, effects: tuple[Effect, ...]) -> None:
        """The desk's effects in order; an answer no hook was waiting for (its backstop denied first)
        turns the call's ``tool.decided`` into a deny by ``deadline`` saying so
        (docs/adapters/common.md#vendor-decisions)."""
        for effect in effects:
            if isinstance(effect, Emit):
                self.emit(effect.event)
            elif isinstance(effect, Answer):
                key = self.keys.get(effect.call_id)
                if key is not None and not self.channel.answer(key, answer_body(effect.decision)):
                    self.unanswered.add(effect.call_id)
            elif isinstance(effect, Arm):
                self.deadlines.arm(effect.call_id)
            elif isinstance(effect, Disarm):
                self.deadlines.disarm(effect.call_id)

    def outputs(self, outputs: tuple[Output, ...]) -> None:
        ended = False
        for output in outputs:
            if isinstance(output, Emitted):
                self.emit(output.payload, output.at)
                ended = ended or isinstance(output.payload, TurnEnded)
            else:
                self.names[output.call.call_id] = output.call.name
                tree = tree_facts(resolve_call(output.call.name, output.call.input)[1], self.launch.cwd)
                self.desk, effects = present(self.desk, presented_call(output.call, tree, self.session_cwd))
                self.perform(effects)
        if ended:
            self.abandon("the turn ended")

    def abandon(self, why: AbandonCause) -> None:
        self.desk, effects = abandon(self.desk, why)
        self.perform(effects)

    def ring(self) -> None:
        """Drain the doorbell: each key's request is a call the hook delivered
        (docs/adapters/common.md#vendor-decisions)."""
        for key in self.channel.ring():
            raw = self.channel.request(key)
            if raw is None:
                self.emit(
                    WarningRaised(
                        code="COVERAGE_GAP",
                        message=f"the hook rang the doorbell with key {key} and left no request file, "
                        "so that call could not be presented",
                    )
                )
                continue
            call = read_hook_request(key, raw)
            self.keys[call.call_id] = key
            self.correlator, outputs = on_hook_call(self.correlator, call)
            self.outputs(outputs)

    def record(self, number: int, raw: bytes) -> None:
        self.ring()
        self.reader, readings = read_rollout_line(self.reader, raw, number)
        self.correlator, outputs = on_readings(self.correlator, readings)
        self.outputs(outputs)

    def command(self, line: bytes, on_steering_refusal: Callable[[str], None]) -> str | None:
        """One ``metaharness.command/1`` line in the order of docs/events.md#commands; returns ``interrupt`` or
        ``halt`` when the child must be stopped."""
        command = steering_command(line, on_steering_refusal)
        if command is None:
            return None
        checked = check_well_formed(command).bind(lambda ok: check_supported(ok.command, "codex", HONOURED_COMMANDS))
        refused = checked.swap().value_or(None)
        if refused is not None:
            self.emit(refused)
            return None
        if isinstance(command, ToolDecide):
            name = self.names.get(command.call_id, "")
            if isinstance(command.decision, Replace) and command.call_id in self.desk.pending_call_ids():
                problem = check_replacement(name, command.decision.input)
                if problem is not None:
                    self.emit(command_refused(command.id, problem.code, problem.message))
                    return None
            self.desk, effects = decide(self.desk, command, self.deadlines.latency_ms(command))
            self.perform(effects)
            return None
        if isinstance(command, Interrupt | Halt):
            control = "halt" if isinstance(command, Halt) else "interrupt"
            self.abandon("the run was halted" if control == "halt" else "the run was interrupted")
            self.emit(command_ok(command.id))
            return control
        return None

    def expire_due(self) -> None:
        for call_id, waited in self.deadlines.take_due():
            self.desk, effects = expire(self.desk, call_id, waited)
            self.perform(effects)

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
            reader = self.sub_readers.get(path, RolloutReader(launch=self.reader.launch))
            self.sub_readers[path], readings = read_sub_agent_line(reader, raw, number)
            self.correlator, outputs = on_readings(self.correlator, readings)
            self.outputs(outputs)
        return bool(lines or sub_lines)

    def end_stream(self) -> None:
        """The rollout is read to its end: the last rings, the correlator's stream end, and every call
        still open abandoned."""
        self.ring()
        self.correlator, outputs = on_stream_end(self.correlator)
        self.outputs(outputs)
        self.abandon("the stream ended")

    def close(
        self, *, halted: bool, killed: bool, tail: bytes, late_events: Callable[[], tuple[Event, ...]], process: Process
    ) -> str:
        """The closing records in order: the session's end, ``RESULT_UNOBSERVED`` for
        the calls that never got a result, the no-terminal-record warning, the wind-up's late events,
        the ``stream.closed`` marker; returns its reason."""
        ended = session_ended(self.reader, self.census)
        if ended is not None:
            self.emit(ended, self.reader.last_complete_at)
        unobserved = result_unobserved(self.stream)
        if unobserved is not None:
            self.emit(unobserved)
        if ended is None and not halted:
            self.emit(no_terminal_record(tail))
        for payload in late_events():
            self.emit(payload)
        reason = closing_reason(halted=halted, killed=killed, stop=stop_word(ended), budget_stops=())
        self.emit(closing_marker(self.stream, reason, process))
        self.channel.close()
        self.sub_agents.close()
        return reason


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
    confined: ConfinedSpawn | None = None,
) -> LiveOutcome:
    """Spawn ``codex exec`` (in ``confined``'s view when given), map its rollout and decide its hook calls until it ends, then wind the
    stream up (docs/events.md#stream-ending, docs/events.md#wind-up-and-signals). Raises ``OSError`` when the spawn
    itself fails. ``process_known`` false writes ``process`` unknown, as conformance C3 does
    (docs/adapters/codex.md#conformance-vectors); ``late_events`` are the wind-up's own events (loopback, retain),
    written before the marker."""
    state = _Run(launch, desk, rollout, run, write_event)
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()
    drained = threading.Event()
    with open(launch.stdout_copy, "wb") as stdout_copy:
        child = subprocess.Popen(
            list(launch.argv) if confined is None else confined.argv,
            cwd=launch.cwd,
            env=launch.environment.as_dict(),
            stdin=subprocess.DEVNULL,
            stdout=stdout_copy,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=() if confined is None else confined.pass_fds,
        )
    if confined is not None:
        confined.spawned()
    assert child.stderr is not None
    signals = SignalQueue(events)
    signals.install()
    listening(child.pid, lambda number: events.put(("signal", number)))
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
                kill_group(child.pid, signal.SIGKILL)
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
        stderr_thread.join(timeout=PIPE_DRAIN_S)
    finally:
        stop.set()
        drained.set()
        signals.restore()
        rollout_tail.close()
    kill_group(child.pid, signal.SIGKILL)
    end_descendants(child.pid)
    code = exit_code if exit_code is not None else child.wait()
    process = wait_status(code)
    marked = process if process_known else wait_status(code, known=False)
    reason = state.close(halted=group.halted, killed=group.killed, tail=bytes(tail), late_events=late_events, process=marked)
    return LiveOutcome(reason, process, state.stream.written)
