"""``run --timeout`` and a closed stdout on every kind, as a user meets them: ``metaharness run`` as a
real process, the pinned CLIs and the project's loop against ``b10x-emulator`` (docs/cli.md "Ending
a run"). Each timed run waits on a call nobody answers, so only the timeout can end it before the
call's own deadline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.emulator import running_emulator
from vendor_cli import pinned_cli

from metaharness.pure.duration import parse_duration
from metaharness.pure.emulator.scenarios import SLEEP_COMMAND
from metaharness.pure.events import read_event

METAHARNESS = str(Path(sys.executable).with_name("metaharness"))
LOOP = Path(sys.executable).with_name("b10x-harness")
WAIT_S = 90
"""A generous bound on one run on a loaded machine."""


def home_with(tmp_path: Path, *programs: tuple[str, str]) -> dict[str, str]:
    """An environment whose HOME's ``.local/bin`` links each (name, target): the child's PATH floor."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    for name, target in programs:
        (home / ".local" / "bin" / name).symlink_to(target)
    return {"HOME": str(home), "PATH": os.environ["PATH"]}


def kind_run(kind: str, root: str, work: Path, env: dict[str, str], *extra: str) -> list[str]:
    argv = [METAHARNESS, "run", kind, "-p", "write the note", "--credentials", "none", "--cwd", str(work)]
    if kind == "b10x":
        return [*argv, "--model", "b10x-emulated", "--model-endpoint", f"{root}/v1", *extra]
    return [*argv, "--model-endpoint", root, *extra]


CASES = [
    pytest.param("claude", "claude-write", marks=pytest.mark.skipif(pinned_cli("claude") is None, reason="no pinned claude")),
    pytest.param("codex", "codex-patch", marks=pytest.mark.skipif(pinned_cli("codex") is None, reason="no pinned codex")),
    pytest.param("b10x", "flat-write"),
]  # fmt: skip


def program_links(kind: str) -> tuple[str, str]:
    if kind == "b10x":
        return ("b10x-harness", str(LOOP))
    found = pinned_cli(kind)
    assert found is not None
    return (kind, os.path.realpath(found))


@pytest.mark.parametrize(("kind", "scenario"), CASES)
def test_a_timeout_stops_the_run_like_sigterm_and_says_so(kind: str, scenario: str, tmp_path: Path) -> None:
    """The one real-timer test of ``--timeout``: 10 s, past a loaded machine's start-up to the asked call
    (a pinned CLI's start-up under load outran a 4 s one), and short of b10x's 25 s call deadline."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello harness\n")
    env = home_with(tmp_path, program_links(kind))
    with running_emulator("--scenario", scenario) as (base_url, _):
        started = time.monotonic()
        argv = kind_run(kind, base_url.removesuffix("/v1"), work, env, "--decisions", "ask", "--timeout", "10s")
        done = subprocess.run(argv, env=env, stdin=subprocess.PIPE, capture_output=True, timeout=WAIT_S, check=False)
        took = time.monotonic() - started
    lines = done.stdout.splitlines()
    events = [read_event(line).unwrap() for line in lines]
    names = [json.loads(line)["event"] for line in lines]
    assert names[-1] == "stream.closed" and names.count("stream.closed") == 1, done.stderr.decode()
    parsed = [json.loads(line) for line in lines]
    asked = next(e for e in parsed if e["event"] == "tool.requested" and e["decision_required"])
    decided = next(e for e in parsed if e["event"] == "tool.decided" and e["call_id"] == asked["call_id"])
    assert decided["decided_by"] == "adapter" and decided["decision"]["reason"].startswith("the run was interrupted")
    warnings = [e["code"] for e in parsed if e["event"] == "warning"]
    assert "RUN_TIMEOUT" in warnings and "PENDING_CALL_ABANDONED" in warnings
    timeout = next(e for e in parsed if e.get("code") == "RUN_TIMEOUT")
    assert timeout["message"].startswith("the run's --timeout of 10s expired")
    assert parsed[-1]["reason"] == "killed" and done.returncode == 3
    assert took < 25, "the run waited for the call's own deadline instead of its timeout"
    assert not (work / "note.md").exists() and len(events) == len(lines)


def sleeping_commands() -> list[int]:
    """The processes still running the scenario's long command, found by its command line."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and SLEEP_COMMAND.split(" && ")[0].encode() in (entry / "cmdline").read_bytes().replace(b"\0", b" "):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("kind", [
    pytest.param("claude", marks=pytest.mark.skipif(pinned_cli("claude") is None, reason="no pinned claude")),
    pytest.param("codex", marks=pytest.mark.skipif(pinned_cli("codex") is None, reason="no pinned codex"))])
def test_a_closed_stdout_stops_the_child_and_ends_with_a_named_refusal(kind: str, tmp_path: Path) -> None:
    """``metaharness run … | head -1``: the reader takes one line and goes; the next line written
    stops the run, and the child's long shell command dies with its group."""
    work = tmp_path / "work"
    work.mkdir()
    env = home_with(tmp_path, program_links(kind))
    with running_emulator("--scenario", "shell-sleep") as (base_url, _):
        argv = kind_run(kind, base_url.removesuffix("/v1"), work, env, "--decisions", "observe")
        process = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)  # fmt: skip
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()
        started = time.monotonic()
        code = process.wait(timeout=WAIT_S)
        stderr = process.stderr.read().decode()
    assert json.loads(first)["event"] == "session.started"
    assert code == 2 and stderr.startswith("metaharness: stdout-closed: the event stream's reader closed stdout after ")
    assert time.monotonic() - started < 30, "the run waited for its child's command to finish"
    assert sleeping_commands() == []


def test_durations_read_as_the_option_documents() -> None:
    assert [parse_duration(text).unwrap() for text in ("600", "1.5", "90s", "10m", "1h")] == [600, 1.5, 90, 600, 3600]
    assert all(parse_duration(text).failure() for text in ("0", "-1", "10d", "m", "", "1 h"))


def test_a_bad_duration_is_a_usage_refusal() -> None:
    done = subprocess.run([METAHARNESS, "run", "claude", "-p", "x", "--timeout", "soon"], capture_output=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith("metaharness: usage: ") and "'soon' is not a duration" in done.stderr.decode()
