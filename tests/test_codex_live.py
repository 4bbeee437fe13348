"""The codex live loop's hook handling over a real hook channel (FIFOs in a scratch tree), without a
vendor: a lost answer, a missing request file, and the census of what was written
(docs/adapters/common.md#vendor-decisions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from helpers.frames import frame_skeleton

from metaharness.pure.codex.launch import CodexLaunch, CodexRunSpec, plan_codex_launch
from metaharness.pure.codex.replay import replay_launch
from metaharness.pure.codex.session import open_session
from metaharness.pure.decisions import open_desk
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.events import EventValue, Stream
from metaharness.pure.frames import seal_frame
from metaharness.pure.stream_writer import write_line
from metaharness.shell.codex.live import CodexLoop
from metaharness.shell.codex.rollout import RolloutTail
from metaharness.shell.codex.run import materialise
from metaharness.shell.tree_links import tree_facts

FRAME = seal_frame(
    frame_skeleton(operations=[{"op": "file.read"}])
).unwrap()


def live_run(tmp_path: Path) -> tuple[CodexLoop, list[bytes]]:
    run, lines, _ = loop_and_launch(tmp_path)
    return run, lines


def loop_and_launch(tmp_path: Path) -> tuple[CodexLoop, list[bytes], CodexLaunch]:
    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700)
    spec = CodexRunSpec(
        prompt="p",
        decisions="frame",
        environment=EnvironmentDeclaration(kind="codex", credentials="none", model_endpoint="http://127.0.0.1:1"),
    )
    facts = {"/operator/.local/bin/codex": ProgramCandidate(regular=True, executable=True)}
    launch = plan_codex_launch(spec, {"HOME": "/operator"}, str(scratch), facts).unwrap()
    materialise(launch)
    lines: list[bytes] = []
    rollout = replay_launch(decisions="frame", hermetic="off", transcript_path="r.jsonl")
    session, _ = open_session(open_desk("frame", FRAME, 60_000), rollout, "codex-test", tree_facts((), launch.cwd))
    stream = Stream("codex-test")

    def write(value: EventValue) -> None:
        nonlocal stream
        stream, line = write_line(stream, value)
        lines.append(line)

    return CodexLoop(launch, session, write), lines, launch


def ring(scratch: Path, key: str, request: dict | None) -> None:
    channel = scratch / "hook-channel"
    if request is not None:
        (channel / "requests" / f"{key}.json").write_text(json.dumps(request))
    descriptor = os.open(channel / "doorbell", os.O_WRONLY | os.O_NONBLOCK)
    os.write(descriptor, f"{key}\n".encode())
    os.close(descriptor)


def test_an_answer_no_hook_waits_for_is_a_deny_by_deadline_saying_the_hook_gave_up(tmp_path: Path):
    run, lines = live_run(tmp_path)
    request = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "call_1"}
    ring(tmp_path / "scratch", "AbCdEfGh", request)
    run.ring()
    events = [json.loads(line) for line in lines]
    assert [e["event"] for e in events] == ["tool.requested", "tool.decided"]
    decided = events[1]
    assert decided["decided_by"] == "deadline" and decided["seam"] == "hook"
    assert decided["decision"]["reason"].startswith("the hook gave up first")
    assert run.session.census.by_decider == {"deadline": 1} and run.session.census.denied == 1
    answer = tmp_path / "scratch" / "hook-channel" / "responses" / "AbCdEfGh.json"
    assert b"this step admits" in answer.read_bytes()
    run.channel.close()


def test_a_hook_that_waits_gets_the_frame_deny_and_the_decision_stands(tmp_path: Path):
    run, lines = live_run(tmp_path)
    wake = tmp_path / "scratch" / "hook-channel" / "ready" / "Waiting1.wake"
    os.mkfifo(wake)
    reader = os.open(wake, os.O_RDONLY | os.O_NONBLOCK)
    ring(tmp_path / "scratch", "Waiting1", {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "c"})
    run.ring()
    assert os.read(reader, 16) == b"\n"
    os.close(reader)
    decided = json.loads(lines[-1])
    assert decided["decided_by"] == "frame" and decided["decision"]["decision"] == "deny"
    run.channel.close()


def test_a_key_without_a_request_file_is_a_coverage_gap(tmp_path: Path):
    run, lines = live_run(tmp_path)
    ring(tmp_path / "scratch", "Missing1", None)
    run.ring()
    (event,) = [json.loads(line) for line in lines]
    assert event["event"] == "warning" and event["code"] == "COVERAGE_GAP" and "Missing1" in event["message"]
    run.channel.close()


WRITE_AND_EXIT = """
import os, sys
day = os.path.join(sys.argv[1], "2026", "12", "01")
os.makedirs(day)
with open(os.path.join(day, "rollout-2026-12-01T00-00-00-x.jsonl"), "wb") as rollout:
    rollout.write(b'{"type":"one"}\\n{"type":"two"}\\n')
"""


def exited_after_writing(tmp_path: Path, kill: bool) -> tuple[CodexLoop, RolloutTail, CodexLaunch]:
    """A real child that writes two rollout lines and exits, handed to the loop as its exit."""
    run, _, launch = loop_and_launch(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", WRITE_AND_EXIT, launch.sessions_dir], start_new_session=True)
    child.wait()
    run.exited(child, kill)
    return run, run.rollout_tail(launch), launch


def test_once_codex_exec_has_exited_its_rollout_is_polled_at_once_and_read_to_its_end(tmp_path: Path):
    """docs/adapters/codex.md#rollout-mapping: the exec child's group is killed at its exit, so nothing is
    left to write the rollout; the next poll is due at once, and that one poll ends it with every line."""
    run, tail, launch = exited_after_writing(tmp_path, kill=True)
    assert run.next_poll <= time.monotonic()
    run.poll(tail)
    assert run.rollout_ended
    assert Path(launch.rollout_copy).read_bytes() == b'{"type":"one"}\n{"type":"two"}\n'
    tail.close()
    run.channel.close()


def test_an_app_server_that_exited_is_still_read_until_two_polls_find_nothing(tmp_path: Path):
    run, tail, _ = exited_after_writing(tmp_path, kill=False)
    ended = []
    for _ in range(3):
        run.poll(tail)
        ended.append(run.rollout_ended)
    assert ended == [False, False, True]
    tail.close()
    run.channel.close()
