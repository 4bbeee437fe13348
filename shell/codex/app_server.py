"""The live run loop of a codex catalogue run: ``codex app-server`` over stdio
(docs/adapters/common.md#vendor-launch-order; docs/adapters/codex.md#catalogue-app-server; design amendment a66).

The server runs in its own process group with pipes for stdin and stdout; every line it writes is
kept in ``rollout.stdout.jsonl`` and folded into the pure session (``metaharness.pure.codex.app_server``).
Each ``item/tool/call`` goes through the codex correlator after the rollout lines already written
(so ``session.started`` precedes it) and is presented to the decision desk on seam ``owned_tool``; a
call the desk lets through is performed by a ``metaharness mcp-serve --catalogue`` child over the
scratch copy, a denied one performs nothing. Events are read from the thread's rollout exactly as
for ``codex exec``, with the same hook channel, commands, deadlines and signals
(``metaharness.shell.codex.live``); ``turn/completed`` closes the server's stdin and stops its
group 5 s later.
"""

from __future__ import annotations

import importlib.metadata
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

import msgspec
from returns.result import Result

from metaharness.pure.bounds import RECORD_LINE_LIMIT
from metaharness.pure.catalogue import Catalogue, check_codex_names
from metaharness.pure.codex.app_server import (
    CATALOGUE_COPY,
    Decide,
    Note,
    Perform,
    Send,
    Session,
    Step,
    TurnCompleted,
    Warn,
    answer_decision,
    app_server_args,
    catalogue_server_args,
    catalogue_server_gone,
    open_session,
    presented_tool_call,
    read_catalogue_server_line,
    read_server_line,
)
from metaharness.pure.codex.launch import CodexLaunch
from metaharness.pure.codex.rollout import RolloutLaunch
from metaharness.pure.correlation import Output, Present, on_hook_call
from metaharness.pure.decisions import Answer, Desk, Effect, present
from metaharness.pure.events import Event
from metaharness.pure.hook_channel import HookCall
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import bounded_lines
from metaharness.shell.catalogue_file import read_back_scratch_copy, read_catalogue, write_scratch_copy
from metaharness.shell.child_end import end_descendants
from metaharness.shell.child_process import (
    GRACE_S,
    GroupStop,
    SignalQueue,
    keep_tail,
    kill_group,
    pump_fd,
    pump_lines,
    wait_status,
)
from metaharness.shell.codex.live import LiveOutcome, _Run, _wait_child, _watch_doorbell
from metaharness.shell.codex.rollout import POLL_INTERVAL_S, QUIET_POLLS_AFTER_EXIT, RolloutTail
from metaharness.shell.facts import own_cli
from metaharness.shell.run_signals import listening
from metaharness.shell.tree_links import real_subjects

CATALOGUE_SERVER_LOG = "catalogue-server.stderr"
"""The catalogue server's stderr, kept in the scratch root."""

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn


def read_codex_catalogue(path: str) -> Result[Catalogue, Refusal]:
    """Stage 6 on codex: the catalogue file's refusals (docs/hermetic.md#catalogue-refusals), then
    ``catalogue-name-reserved`` for an entry app-server would refuse at ``thread/start``."""
    return read_catalogue(path).bind(lambda catalogue: check_codex_names(catalogue, path))


def place_catalogue(
    launch: CodexLaunch, catalogue: Catalogue, source: str, *, proxy_started: bool, probed: bool
) -> Result[None, Refusal]:
    """Write the scratch copy the catalogue server reads and read it back before the spawn, else
    ``catalogue-copy-differs`` saying what had started by then (docs/hermetic.md#catalogue-refusals,
    #catalogue-scratch-copy)."""
    path = os.path.join(launch.scratch, CATALOGUE_COPY)
    write_scratch_copy(catalogue, path)
    happened = ["the scratch files had been written"]
    happened += ["the loopback proxy had started"] if proxy_started else []
    happened += ["the vendor binary had been run with --version"] if probed else []
    said = happened[0] if len(happened) == 1 else ", ".join(happened[:-1]) + " and " + happened[-1]
    return read_back_scratch_copy(path, catalogue, source, said)


class _AppServerRun(_Run):
    """The codex live run plus the app-server session: calls the server asks for are presented on
    seam ``owned_tool`` and their decisions answered through the session."""

    def __init__(
        self,
        launch: CodexLaunch,
        desk: Desk,
        rollout: RolloutLaunch,
        run: str,
        write_event: Callable[[bytes], None],
        catalogue: Catalogue,
        session: Session,
    ) -> None:
        super().__init__(launch, desk, rollout, run, write_event)
        self.catalogue = catalogue
        self.session = session
        self.owned: set[str] = set()
        self.server_in: IO[bytes] | None = None
        self.catalogue_in: IO[bytes] | None = None
        self.catalogue_gone = False
        self.finished = False

    def perform(self, effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, Answer) and effect.call_id in self.owned:
                self.session, steps = answer_decision(self.session, effect.call_id, effect.decision)
                self.steps(steps)
            else:
                super().perform((effect,))

    def outputs(self, outputs: tuple[Output, ...]) -> None:
        for output in outputs:
            if isinstance(output, Present) and output.call.call_id in self.owned:
                call = output.call
                self.names[call.call_id] = call.name
                presented = presented_tool_call(self.catalogue, call.call_id, call.name, call.input)
                real = real_subjects(presented.subjects, self.launch.cwd)
                self.desk, effects = present(self.desk, msgspec.structs.replace(presented, subjects=real))
                self.perform(effects)
            else:
                super().outputs((output,))

    def steps(self, steps: tuple[Step, ...]) -> None:
        """Carry out what the session said, in order."""
        for step in steps:
            if isinstance(step, Send):
                _write(self.server_in, step.line)
            elif isinstance(step, Perform):
                if self.catalogue_gone or not _write(self.catalogue_in, step.line):
                    self.catalogue_line(None)
            elif isinstance(step, Decide):
                self.owned.add(step.call_id)
                call = HookCall(key="", call_id=step.call_id, name=step.tool, input=step.arguments, correlated=True)
                self.correlator, outputs = on_hook_call(self.correlator, call)
                self.outputs(outputs)
            elif isinstance(step, Warn):
                self.emit(step.warning)
            elif isinstance(step, Note):
                sys.stderr.write(f"metaharness: {step.text}\n")
                sys.stderr.flush()
            elif isinstance(step, TurnCompleted):
                self.finished = True
        if self.session.phase == "failed":
            self.finished = True

    def server_line(self, line: bytes) -> None:
        self.ring()
        self.session, steps = read_server_line(self.session, line)
        self.steps(steps)

    def catalogue_line(self, line: bytes | None) -> None:
        """A line of the catalogue server's answers; ``None`` when it has ended, after which every call
        sent to it, and every later one, is answered as a failure."""
        if line is None:
            self.catalogue_gone = True
            self.session, steps = catalogue_server_gone(self.session)
        else:
            self.session, steps = read_catalogue_server_line(self.session, line)
        self.steps(steps)


def _write(stream: IO[bytes] | None, line: bytes) -> bool:
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


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None and not stream.closed:
        try:
            stream.close()
        except OSError:
            pass


def _copy_lines(stream: IO[bytes], copy: IO[bytes], kind: str, events: queue.Queue[tuple[str, Any]]) -> None:
    """Each line the server writes is copied (``rollout.stdout.jsonl``) before it is queued."""
    for line in bounded_lines(stream, RECORD_LINE_LIMIT):
        copy.write(line)
        copy.flush()
        events.put((kind, line))
    events.put((kind, None))


def drive_app_server(
    *,
    launch: CodexLaunch,
    desk: Desk,
    rollout: RolloutLaunch,
    run: str,
    catalogue: Catalogue,
    model: str | None,
    write_event: Callable[[bytes], None],
    commands: int | None,
    on_steering_refusal: Callable[[str], None],
    late_events: Callable[[], tuple[Event, ...]] = tuple,
    confined: ConfinedSpawn | None = None,
    confined_server: ConfinedSpawn | None = None,
) -> LiveOutcome:
    """Start the catalogue server and ``codex app-server``, hold the conversation, map the rollout
    and decide every call until the turn completes and the server ends, then wind the stream up
    (docs/events.md#stream-ending, docs/events.md#wind-up-and-signals); ``confined`` runs the app-server in its view and
    ``confined_server`` the catalogue server in one of its own. Raises ``OSError`` when a spawn itself fails."""
    session, first = open_session(
        version=importlib.metadata.version("metaharness"),
        cwd=launch.cwd,
        model=model,
        sandbox=launch.config.sandbox_mode,
        catalogue=catalogue,
        user_turn=launch.user_turn,
    )
    state = _AppServerRun(launch, desk, rollout, run, write_event, catalogue, session)
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()
    drained = threading.Event()
    with open(os.path.join(launch.scratch, CATALOGUE_SERVER_LOG), "wb") as log:
        served = subprocess.Popen(
            list(catalogue_server_args(own_cli(), launch.scratch, launch.cwd, catalogue))
            if confined_server is None
            else confined_server.argv,
            cwd=launch.cwd,
            env=launch.environment.as_dict(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            pass_fds=() if confined_server is None else confined_server.pass_fds,
        )
    if confined_server is not None:
        confined_server.spawned()
    assert served.stdin is not None and served.stdout is not None
    state.catalogue_in = served.stdin
    try:
        child = subprocess.Popen(
            [launch.program, *app_server_args()] if confined is None else confined.argv,
            cwd=launch.cwd,
            env=launch.environment.as_dict(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=() if confined is None else confined.pass_fds,
        )
        if confined is not None:
            confined.spawned()
    except OSError:
        _close(served.stdin)
        served.wait()
        raise
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    state.server_in = child.stdin
    stdout_copy = open(launch.stdout_copy, "wb")  # noqa: SIM115 - closed at wind-up, after the pump ends
    signals = SignalQueue(events)
    signals.install()
    listening(child.pid, lambda number: events.put(("signal", number)))
    tail = bytearray()
    stderr_thread = threading.Thread(target=keep_tail, args=(child.stderr, tail), daemon=True)
    stderr_thread.start()
    server_thread = threading.Thread(
        target=_copy_lines, args=(child.stdout, stdout_copy, "server", events), daemon=True
    )
    server_thread.start()
    threading.Thread(target=pump_lines, args=(served.stdout, "catalogue", events), daemon=True).start()
    threading.Thread(target=_wait_child, args=(child, events), daemon=True).start()
    threading.Thread(target=_watch_doorbell, args=(state.channel.fileno(), events, drained, stop), daemon=True).start()
    if commands is not None:
        threading.Thread(target=pump_fd, args=(commands, "command", events), daemon=True).start()
    state.steps(first)
    rollout_tail = RolloutTail(launch.sessions_dir, launch.rollout_copy)
    group = GroupStop(child.pid)
    term_at: float | None = None
    exit_code: int | None = None
    quiet = 0
    next_poll = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            waits = [next_poll - now]
            waits += [at - now for at in (state.deadlines.next_at(),) if at is not None]
            waits += [at - now for at in (term_at, group.kill_at) if at is not None]
            try:
                kind, item = events.get(timeout=max(0.0, min(waits)))
            except queue.Empty:
                kind, item = "tick", None
            if kind == "ring":
                state.ring()
                drained.set()
            elif kind == "exited":
                exit_code = item
            elif kind == "server" and item is not None:
                for number, raw in rollout_tail.poll():
                    state.record(number, raw)
                state.server_line(item)
            elif kind == "catalogue":
                state.catalogue_line(item)
            elif kind == "command" and item is not None:
                control = state.command(item, on_steering_refusal)
                if control is not None:
                    group.control(control)
            elif kind == "signal":
                if group.second_signal():
                    continue
                state.abandon("the run was interrupted")
                group.terminate()
            if state.finished and term_at is None and group.kill_at is None:
                _close(child.stdin)
                term_at = time.monotonic() + GRACE_S
            now = time.monotonic()
            if term_at is not None and now >= term_at:
                term_at = None
                group.terminate()
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
        server_thread.join(timeout=GRACE_S)
    finally:
        stop.set()
        drained.set()
        signals.restore()
        rollout_tail.close()
        _close(child.stdin)
        _close(served.stdin)
        _stop_catalogue_server(served)
    kill_group(child.pid, signal.SIGKILL)
    end_descendants(child.pid)
    server_thread.join(timeout=GRACE_S)
    stdout_copy.close()
    code = exit_code if exit_code is not None else child.wait()
    process = wait_status(code)
    reason = state.close(halted=group.halted, killed=group.killed, tail=bytes(tail), late_events=late_events, process=process)
    return LiveOutcome(reason, process, state.stream.written)


def _stop_catalogue_server(served: subprocess.Popen[bytes]) -> None:
    """End of file ends the catalogue server (docs/hermetic.md#mcp-wire); one that lingers is killed."""
    try:
        served.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        served.kill()
        served.wait()
