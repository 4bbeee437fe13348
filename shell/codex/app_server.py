"""The live run loop of a codex catalogue run: ``codex app-server`` over stdio
(docs/adapters/common.md#vendor-launch-order; docs/adapters/codex.md#catalogue-app-server).

The server runs in its own process group with pipes for stdin and stdout; every line it writes is
kept in ``rollout.stdout.jsonl`` and folded into the pure session (``metaharness.pure.codex.session``,
its conversation ``metaharness.pure.codex.app_server``).
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
import subprocess
import time
from collections.abc import Callable
from functools import partial
from typing import IO, TYPE_CHECKING

from returns.result import Result

from metaharness.pure.bounds import RECORD_LINE_LIMIT
from metaharness.pure.budgets import GRACE_S
from metaharness.pure.catalogue import Catalogue, started_by_then
from metaharness.pure.codex.app_server import CATALOGUE_COPY, app_server_args, catalogue_server_args
from metaharness.pure.codex.app_server import open_session as open_conversation
from metaharness.pure.codex.launch import CodexLaunch
from metaharness.pure.codex.rollout import RolloutLaunch
from metaharness.pure.codex.session import (
    STOP_POLICY,
    open_session,
    read_catalogue_server,
    read_server,
    server_line_subjects,
)
from metaharness.pure.decisions import Desk
from metaharness.pure.events import Event, EventValue
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_end import RunEnd
from metaharness.pure.stop import TERMINATE
from metaharness.shell.bounded_reads import LineCutter
from metaharness.shell.catalogue_file import read_back_scratch_copy, write_scratch_copy
from metaharness.shell.child_process import ChildStop
from metaharness.shell.codex.live import CodexLoop
from metaharness.shell.codex.rollout import RolloutTail
from metaharness.shell.facts import own_cli
from metaharness.shell.live_engine import Engine, ended, read_rest, spawn
from metaharness.shell.tree_links import tree_facts

CATALOGUE_SERVER_LOG = "catalogue-server.stderr"
"""The catalogue server's stderr, kept in the scratch root."""

if TYPE_CHECKING:
    from metaharness.shell.confinement import ConfinedSpawn


def place_catalogue(
    launch: CodexLaunch, catalogue: Catalogue, source: str, *, proxy_started: bool, probed: bool
) -> Result[None, Refusal]:
    """Write the scratch copy the catalogue server reads and read it back before the spawn, else
    ``catalogue-copy-differs`` saying what had started by then (docs/hermetic.md#catalogue-refusals,
    #catalogue-scratch-copy)."""
    path = os.path.join(launch.scratch, CATALOGUE_COPY)
    write_scratch_copy(catalogue, path)
    said = started_by_then(proxy_started=proxy_started, probed=probed)
    return read_back_scratch_copy(path, catalogue, source, said)


def _close(stream: IO[bytes] | None) -> None:
    if stream is not None and not stream.closed:
        try:
            stream.close()
        except OSError:
            pass


class _Conversation:
    """The app-server's and the catalogue server's pipes as the engine's handlers see them: each line
    the server writes (cut to ``RECORD_LINE_LIMIT``) is copied (``rollout.stdout.jsonl``) before it is
    read; once the session is finished the server's stdin is closed and its group is stopped
    ``GRACE_S`` later."""

    def __init__(self, state: CodexLoop, child: subprocess.Popen[bytes], copy: IO[bytes], tail: RolloutTail) -> None:
        self.state = state
        self.child = child
        self.copy = copy
        self.rollout_tail = tail
        self.cutter = LineCutter(RECORD_LINE_LIMIT)
        self.term_at: float | None = None
        self.ending = False

    def server(self, chunk: bytes) -> None:
        for line in self.cutter.feed(chunk):
            self.server_line(line)

    def server_line(self, line: bytes) -> None:
        """A line of the server's: copied, then the rollout's new lines, then the doorbell, then the line."""
        self.keep(line)
        for number, raw in self.rollout_tail.poll():
            self.state.record(number, raw)
        self.state.ring()
        subjects = server_line_subjects(self.state.session, line)
        tree = tree_facts(subjects, self.state.cwd) if subjects else None
        self.state.step(read_server(self.state.session, line, tree))
        if self.state.session.finished and not self.ending and self.state.stopper.kill_at is None:
            self.ending = True
            _close(self.child.stdin)
            self.term_at = time.monotonic() + GRACE_S

    def server_end(self) -> None:
        rest = self.cutter.rest()
        if rest:
            self.server_line(rest)

    def keep(self, line: bytes) -> None:
        self.copy.write(line)
        self.copy.flush()

    def keep_rest(self, fd: int) -> None:
        """Once the run has ended: what the server still writes within ``GRACE_S`` is copied, not read."""
        for line in (*self.cutter.feed(read_rest(fd, GRACE_S)), self.cutter.rest()):
            self.keep(line)

    def catalogue(self, line: bytes | None) -> None:
        self.state.step(read_catalogue_server(self.state.session, line))

    def terminate(self) -> None:
        self.term_at = None
        self.state.stopper.send(TERMINATE)


def drive_app_server(
    *,
    launch: CodexLaunch,
    desk: Desk,
    rollout: RolloutLaunch,
    run: str,
    catalogue: Catalogue,
    model: str | None,
    write_event: Callable[[EventValue], None],
    commands: int | None,
    on_steering_refusal: Callable[[str], None],
    late_events: Callable[[], tuple[Event, ...]] = tuple,
    confined: ConfinedSpawn | None = None,
    confined_server: ConfinedSpawn | None = None,
) -> RunEnd:
    """Start the catalogue server and ``codex app-server``, hold the conversation, map the rollout
    and decide every call until the turn completes and the server ends, then wind the stream up
    (docs/events.md#stream-ending, docs/events.md#wind-up-and-signals); ``confined`` runs the app-server in its view and
    ``confined_server`` the catalogue server in one of its own. Raises ``OSError`` when a spawn itself fails."""
    conversation, opening = open_conversation(
        version=importlib.metadata.version("metaharness"),
        cwd=launch.cwd,
        model=model,
        sandbox=launch.config.sandbox_mode,
        catalogue=catalogue,
        user_turn=launch.user_turn,
    )
    session, opened = open_session(desk, rollout, run, tree_facts((), launch.cwd), catalogue, conversation, opening)
    state = CodexLoop(launch, session, write_event)
    rollout_tail = state.rollout_tail(launch)
    stdout_copy = state.new_copy(launch.stdout_copy)
    served, child = _spawn_servers(state, launch, catalogue, confined, confined_server)
    assert served.stdin is not None and served.stdout is not None
    state.catalogue_in = served.stdin
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    state.server_in = child.stdin
    state.stopper = ChildStop(child.pid, STOP_POLICY)
    pipes = _Conversation(state, child, stdout_copy, rollout_tail)
    engine = Engine()
    try:
        state.watch(engine, child, commands, on_steering_refusal)
        engine.on_exit(child.pid, partial(state.exited, child, False))
        engine.on_chunks(child.stdout.fileno(), pipes.server, pipes.server_end)
        engine.on_lines(served.stdout.fileno(), RECORD_LINE_LIMIT, pipes.catalogue, partial(pipes.catalogue, None))
        engine.timer(lambda: pipes.term_at, pipes.terminate)
        engine.timer(lambda: state.next_poll, partial(state.poll, rollout_tail))
        state.perform(opened)
        engine.run(until=lambda: state.rollout_ended)
        state.end_stream()
        state.stderr(read_rest(child.stderr.fileno(), GRACE_S))
    finally:
        engine.close()
        rollout_tail.close()
        _close(child.stdin)
        _close(served.stdin)
        _stop_catalogue_server(served)
    return _wound_up(state, child, pipes, stdout_copy, late_events)


def _wound_up(
    state: CodexLoop, child: subprocess.Popen[bytes], pipes: _Conversation, stdout_copy: IO[bytes],
    late_events: Callable[[], tuple[Event, ...]],
) -> RunEnd:  # fmt: skip
    """The app-server's end as every live loop's (``metaharness.shell.live_engine.ended``: its group killed, every
    orphan ended, its status), the rest of its stdout kept, and the stream wound up with the late events."""
    assert child.stdout is not None
    process = ended(child.pid, state.exit_code if state.exit_code is not None else child.wait())
    pipes.keep_rest(child.stdout.fileno())
    stdout_copy.close()
    stopper = state.stopper
    reason = state.close(
        halted=stopper.halted, killed=stopper.killed, tail=bytes(state.tail), late_events=late_events, process=process
    )
    return RunEnd(reason, process)


def _spawn_servers(
    state: CodexLoop,
    launch: CodexLaunch, catalogue: Catalogue, confined: ConfinedSpawn | None, confined_server: ConfinedSpawn | None
) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
    """The catalogue server, then ``codex app-server`` in its own process group, each through the live engine's
    spawn (in its view when confined); a failed second spawn ends the first and raises ``OSError``."""
    environment = launch.environment.as_dict()
    with state.new_copy(os.path.join(launch.scratch, CATALOGUE_SERVER_LOG)) as log:
        served = spawn(
            catalogue_server_args(own_cli(), launch.scratch, launch.cwd, catalogue), cwd=launch.cwd, env=environment,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, confined=confined_server, stderr=log, own_group=False,
        )  # fmt: skip
    try:
        child = spawn((launch.program, *app_server_args()), cwd=launch.cwd, env=environment, stdin=subprocess.PIPE,
                      stdout=subprocess.PIPE, confined=confined)  # fmt: skip
    except OSError:
        _close(served.stdin)
        served.wait()
        raise
    return served, child


def _stop_catalogue_server(served: subprocess.Popen[bytes]) -> None:
    """End of file ends the catalogue server (docs/hermetic.md#mcp-wire); one that lingers is killed."""
    try:
        served.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        served.kill()
        served.wait()
