"""The live run loop of a b10x run (spec 40 §3.5, §6; spec 10 §4.10).

The loop runs in its own process group. Its stdout is read line by line, each line appended to the
retained transcript and then handed to the pure seam; answer lines go to its stdin; commands arrive
on metaharness's own stdin; deadlines are timers on the main thread. Every decision is the seam's:
this module only moves bytes and signals in the order the seam's effects say.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

import msgspec
from returns.result import Failure

from metaharness.pure.b10x.seam import (
    Answer,
    Arm,
    Effect,
    SeamSettings,
    SeamState,
    abandon_pending,
    end_of_record,
    expire,
    open_seam,
    read_line,
    take_command,
    wind_up,
)
from metaharness.pure.commands import read_command, steering_refusal
from metaharness.pure.events import Exited, Process, Signaled, StreamClosed, UnknownProcess, WarningRaised

STDERR_KEPT = 64 * 1024
SIGNAL_GRACE_S = 5.0


class LoopOutcome(msgspec.Struct, frozen=True):
    """How a driven loop ended: the seam's final state, the closing reason and the child's status."""

    state: SeamState
    reason: str
    process: Process


def _pump_lines(stream: IO[bytes], kind: str, events: queue.Queue[tuple[str, Any]]) -> None:
    for line in iter(stream.readline, b""):
        events.put((kind, line))
    events.put((kind, None))


def _pump_fd(fd: int, kind: str, events: queue.Queue[tuple[str, Any]]) -> None:
    """Lines from a raw descriptor: no buffered reader's lock is held at interpreter shutdown."""
    pending = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            events.put((kind, line + b"\n"))
    if pending:
        events.put((kind, pending))
    events.put((kind, None))


def _keep_tail(stream: IO[bytes], tail: bytearray) -> None:
    for chunk in iter(lambda: stream.read1(65536), b""):
        tail.extend(chunk)
        del tail[:-STDERR_KEPT]


class _Signals:
    """SIGINT and SIGTERM sent to metaharness, turned into queue events while the child runs."""

    def __init__(self, events: queue.Queue[tuple[str, Any]]) -> None:
        self.events = events
        self.previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for number in (signal.SIGINT, signal.SIGTERM):
            self.previous[number] = signal.signal(number, self._handle)

    def _handle(self, number: int, _frame: object) -> None:
        self.events.put(("signal", number))

    def restore(self) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)


def _kill_group(pid: int, number: int) -> None:
    try:
        os.killpg(pid, number)
    except (ProcessLookupError, PermissionError):
        pass


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
) -> LoopOutcome:
    """Spawn the loop, read its record through the seam until it ends, and wind the stream up.

    ``opening`` runs once the child is spawned and before its first record line is read: it completes
    ``settings`` (the probed version) and gives the plan-time warnings that open the stream, so a
    version probe may run while the loop starts.

    ``write_event`` receives each event line; ``transcript`` every stdout byte of the child;
    ``commands`` is the descriptor of metaharness's own stdin (``None``: no commands); ``answers_copy`` receives each
    answer line too (conformance C3); ``retain`` runs once the child is reaped and returns its
    ``RETAIN_FAILED`` warnings; ``process_known`` false records ``process`` unknown (conformance C3,
    whose scripted child is not the harness). Raises ``OSError`` when the spawn itself fails.
    """
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    answering = settings.mode != "observe"
    child = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.PIPE if answering else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert child.stdout is not None and child.stderr is not None
    signals = _Signals(events)
    signals.install()
    tail = bytearray()
    threading.Thread(target=_pump_lines, args=(child.stdout, "record", events), daemon=True).start()
    stderr_thread = threading.Thread(target=_keep_tail, args=(child.stderr, tail), daemon=True)
    stderr_thread.start()
    if commands is not None:
        threading.Thread(target=_pump_fd, args=(commands, "command", events), daemon=True).start()
    armed: dict[str, float] = {}

    def perform(effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, bytes):
                write_event(effect)
            elif isinstance(effect, Answer):
                if answers_copy is not None:
                    answers_copy.write(effect.line)
                    answers_copy.flush()
                armed.pop(effect.call_id, None)
                if child.stdin is not None:
                    try:
                        child.stdin.write(effect.line)
                        child.stdin.flush()
                    except (BrokenPipeError, ValueError):
                        pass
            elif isinstance(effect, Arm):
                armed[effect.call_id] = time.monotonic()

    settings, plan_warnings = opening(settings)
    state, effects = open_seam(settings, plan_warnings)
    perform(effects)
    number = 0
    halted = killed = False
    kill_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            waits = [start + settings.deadline_ms / 1000 - now for start in armed.values()]
            if kill_at is not None:
                waits.append(kill_at - now)
            try:
                kind, item = events.get(timeout=max(0.0, min(waits)) if waits else None)
            except queue.Empty:
                now = time.monotonic()
                if kill_at is not None and now >= kill_at:
                    _kill_group(child.pid, signal.SIGKILL)
                    kill_at = None
                for call_id, start in list(armed.items()):
                    if now >= start + settings.deadline_ms / 1000:
                        state, effects = expire(state, call_id, int((now - start) * 1000))
                        perform(effects)
                continue
            if kind == "record":
                if item is None:
                    break
                if transcript is not None:
                    transcript.write(item)
                    transcript.flush()
                number += 1
                line = item[:-1] if item.endswith(b"\n") else item
                state, effects = read_line(state, number, line)
                perform(effects)
            elif kind == "command" and item is not None:
                framed = read_command(item.rstrip(b"\r\n"))
                if isinstance(framed, Failure):
                    on_steering_refusal(steering_refusal(framed.failure()))
                    continue
                command = framed.unwrap()
                call_id = getattr(command, "call_id", None)
                start = armed.get(call_id) if isinstance(call_id, str) else None
                latency = None if start is None else int((time.monotonic() - start) * 1000)
                state, effects, control = take_command(state, command, latency)
                perform(effects)
                if control == "interrupt":
                    try:
                        child.send_signal(signal.SIGINT)
                    except ProcessLookupError:
                        pass
                elif control == "halt":
                    halted = True
                    _kill_group(child.pid, signal.SIGKILL)
            elif kind == "signal":
                if killed:
                    _kill_group(child.pid, signal.SIGKILL)
                    continue
                killed = True
                state, effects = abandon_pending(state, "the run was interrupted")
                perform(effects)
                _kill_group(child.pid, signal.SIGTERM)
                kill_at = time.monotonic() + SIGNAL_GRACE_S
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
    stderr_thread.join(timeout=SIGNAL_GRACE_S)
    _kill_group(child.pid, signal.SIGKILL)
    process: Process = Signaled(signal=-code) if code < 0 else Exited(code=code)
    if not process_known:
        process = UnknownProcess()
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
