"""The live run loop of a b10x run (docs/adapters/b10x.md#process-wiring, #caller-seam;
docs/events.md#wind-up-and-signals).

The loop runs in its own process group. Its stdout is read line by line, each line appended to the
retained transcript and then handed to the pure seam; answer lines go to its stdin; commands arrive
on metaharness's own stdin; deadlines are timers on the main thread. Every decision is the seam's:
this module only moves bytes and signals in the order the seam's effects say.
"""

from __future__ import annotations

import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

import msgspec

from metaharness.pure.b10x.seam import (
    Answer,
    Arm,
    Effect,
    SeamSettings,
    SeamState,
    abandon_pending,
    end_of_record,
    expire,
    line_subjects,
    open_seam,
    read_line,
    take_command,
    wind_up,
)
from metaharness.pure.events import Process, StreamClosed, WarningRaised
from metaharness.shell.child_end import PIPE_DRAIN_S, watch_exit
from metaharness.shell.child_process import (
    GRACE_S,
    SignalQueue,
    keep_tail,
    kill_group,
    pump_fd,
    pump_lines,
    wait_status,
)
from metaharness.shell.run_signals import listening
from metaharness.shell.steering import Deadlines, steering_command
from metaharness.shell.tree_links import tree_facts

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn


class LoopOutcome(msgspec.Struct, frozen=True):
    """How a driven loop ended: the seam's final state, the closing reason and the child's status."""

    state: SeamState
    reason: str
    process: Process


def drive_loop(
    *,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    settings: SeamSettings,
    opening: Callable[[SeamSettings], tuple[SeamSettings, tuple[WarningRaised, ...]]],
    write_event: Callable[[bytes], None],
    transcript: IO[bytes] | None,
    commands: int | None,
    on_steering_refusal: Callable[[str], None],
    answers_copy: IO[bytes] | None = None,
    retain: Callable[[], tuple[WarningRaised, ...]] | None = None,
    process_known: bool = True,
    confined: ConfinedSpawn | None = None,
) -> LoopOutcome:
    """Spawn the loop, read its record through the seam until it ends, and wind the stream up.

    ``opening`` runs once the child is spawned and before its first record line is read: it completes
    ``settings`` (the probed version) and gives the plan-time warnings that open the stream, so a
    version probe may run while the loop starts.

    ``write_event`` receives each event line; ``transcript`` every stdout byte of the child;
    ``commands`` is the descriptor of metaharness's own stdin (``None``: no commands); ``answers_copy`` receives each
    answer line too (conformance C3); ``retain`` runs once the child is reaped and returns its
    ``RETAIN_FAILED`` warnings; ``process_known`` false records ``process`` unknown (conformance C3,
    whose scripted child is not the harness); ``confined`` runs ``argv`` in its view instead. Raises
    ``OSError`` when the spawn itself fails.
    """
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    answering = settings.mode != "observe"
    child = subprocess.Popen(
        list(argv) if confined is None else confined.argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if answering else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        pass_fds=() if confined is None else confined.pass_fds,
    )
    if confined is not None:
        confined.spawned()
    assert child.stdout is not None and child.stderr is not None
    signals = SignalQueue(events)
    signals.install()
    listening(child.pid, lambda number: events.put(("signal", number)))
    tail = bytearray()
    threading.Thread(target=pump_lines, args=(child.stdout, "record", events), daemon=True).start()
    stderr_thread = threading.Thread(target=keep_tail, args=(child.stderr, tail), daemon=True)
    stderr_thread.start()
    if commands is not None:
        threading.Thread(target=pump_fd, args=(commands, "command", events), daemon=True).start()
    watch_exit(child, events)
    deadlines = Deadlines(settings.deadline_ms)

    def perform(effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, bytes):
                write_event(effect)
            elif isinstance(effect, Answer):
                if answers_copy is not None:
                    answers_copy.write(effect.line)
                    answers_copy.flush()
                deadlines.disarm(effect.call_id)
                if child.stdin is not None:
                    try:
                        child.stdin.write(effect.line)
                        child.stdin.flush()
                    except (BrokenPipeError, ValueError):
                        pass
            elif isinstance(effect, Arm):
                deadlines.arm(effect.call_id)

    settings, plan_warnings = opening(settings)
    state, effects = open_seam(settings, plan_warnings)
    perform(effects)
    number = 0
    halted = killed = False
    kill_at: float | None = None
    drained_at: float | None = None
    try:
        while drained_at is None or time.monotonic() < drained_at:
            waits = [at for at in (deadlines.next_at(), kill_at, drained_at) if at is not None]
            try:
                kind, item = events.get(timeout=max(0.0, min(waits) - time.monotonic()) if waits else None)
            except queue.Empty:
                if kill_at is not None and time.monotonic() >= kill_at:
                    kill_group(child.pid, signal.SIGKILL)
                    kill_at = None
                for call_id, waited in deadlines.take_due():
                    state, effects = expire(state, call_id, waited)
                    perform(effects)
                continue
            if kind == "exited":
                drained_at = time.monotonic() + PIPE_DRAIN_S
                kill_at = None
            elif kind == "record":
                if item is None:
                    break
                if transcript is not None:
                    transcript.write(item)
                    transcript.flush()
                number += 1
                line = item[:-1] if item.endswith(b"\n") else item
                subjects = line_subjects(line) if b"tool-requested" in line else ()
                state, effects = read_line(state, number, line, tree_facts(subjects, cwd) if subjects else None)
                perform(effects)
            elif kind == "command" and item is not None:
                command = steering_command(item, on_steering_refusal)
                if command is None:
                    continue
                state, effects, control = take_command(state, command, deadlines.latency_ms(command))
                perform(effects)
                if control == "interrupt":
                    try:
                        if confined is None:
                            child.send_signal(signal.SIGINT)
                        else:
                            confined.signal(child.pid, signal.SIGINT)
                    except ProcessLookupError:
                        pass
                elif control == "halt":
                    halted = True
                    kill_group(child.pid, signal.SIGKILL)
            elif kind == "signal":
                if killed:
                    kill_group(child.pid, signal.SIGKILL)
                    continue
                killed = True
                state, effects = abandon_pending(state, "the run was interrupted")
                perform(effects)
                kill_group(child.pid, signal.SIGTERM)
                kill_at = time.monotonic() + GRACE_S
        state, effects = end_of_record(state)
        perform(effects)
        state, effects = abandon_pending(state, "the stream ended")
        perform(effects)
    finally:
        signals.restore()
        if child.stdin is not None:
            try:
                child.stdin.close()
            except OSError:
                pass
    code = child.wait()
    stderr_thread.join(timeout=PIPE_DRAIN_S)
    kill_group(child.pid, signal.SIGKILL)
    process = wait_status(code, process_known)
    late = retain() if retain is not None else ()
    state, effects = wind_up(
        state, stderr_tail=bytes(tail), halted=halted, killed=killed, process=process, warnings=late
    )
    perform(effects)
    return LoopOutcome(state, closing_reason_of(effects), process)


def closing_reason_of(effects: tuple[Effect, ...]) -> str:
    """The ``reason`` of the ``stream.closed`` line among a wind-up's effects."""
    closed = msgspec.json.decode(next(e for e in reversed(effects) if isinstance(e, bytes)), type=StreamClosed)
    return closed.reason
