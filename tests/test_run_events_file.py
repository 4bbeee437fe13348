"""``run --events FILE`` (docs/cli.md#keeping-the-stream): metaharness writes the whole stream to FILE
itself, whatever happens to stdout. The README's pipeline is driven in a real pseudo-terminal (tmux):
a Ctrl-C there reaches the run and the view alike, the view keeps reading, and FILE ends with the
closing marker. The run is the project's loop against the real ``b10x-emulator``."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest
from governed_b10x import LOOP, METAHARNESS, VENV_BIN, common, workspace
from helpers.emulator import Emulator
from tmux_pane import TMUX, WAIT, Pane
from vendor_cli import home_linking_the_clis, pinned_cli

from metaharness.pure.events import read_event

VIEW = VENV_BIN / "metaharness-view"
COUNTDOWN = re.compile(r"asks the embedder — answer due, (\d+)s left")


def loop_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    return home


def complete_stream(path: Path) -> list[dict]:
    """FILE's lines as events, asserted whole: seq 1..n and one closing ``stream.closed`` last."""
    lines = path.read_bytes().splitlines()
    assert [read_event(line).unwrap().seq for line in lines] == list(range(1, len(lines) + 1))
    events = [json.loads(line) for line in lines]
    assert [e["event"] for e in events].count("stream.closed") == 1 and events[-1]["event"] == "stream.closed"
    return events


@pytest.mark.skipif(TMUX is None, reason="tmux is absent (scripts/test installs it)")
def test_ctrl_c_on_the_readme_pipeline_leaves_the_events_file_complete(tmp_path: Path, emulator: Emulator) -> None:
    """``run … --events FILE | metaharness-view`` in a real terminal, Ctrl-C while a call waits for its
    answer: the terminal sends SIGINT to the whole foreground group; the run closes ``killed`` (exit 3),
    the view reads to the end (exit 0), and FILE holds every line, the closing marker last."""
    home, work, events, statuses = loop_home(tmp_path), workspace(tmp_path), tmp_path / "ev.jsonl", tmp_path / "statuses"
    run = [str(METAHARNESS), "run", "b10x", "--decisions", "ask", "--quiet", "--events", str(events),
           *common(emulator.base_url, work)]  # fmt: skip
    command = f"{shlex.join(run)} | {shlex.quote(str(VIEW))}; echo ${{PIPESTATUS[@]}} >{shlex.quote(str(statuses))}"
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "screen-256color", "LANG": "C.UTF-8"}
    pane = Pane(tmp_path / "tmux.sock", command, env)
    try:
        pane.wait_for(lambda shown: COUNTDOWN.search(shown) is not None, "the asked call's countdown")
        pane.tmux("send-keys", "C-c")
        final = pane.wait_for(lambda shown: "the stream implies exit" in shown, "the end of the run")
        deadline = time.monotonic() + WAIT
        while not statuses.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        pane.close()
    assert statuses.read_text().split() == ["3", "0"], final
    assert "stream: complete" in final and "reason killed" in final
    written = complete_stream(events)
    assert written[-1]["reason"] == "killed"
    decided = next(e for e in written if e["event"] == "tool.decided")
    assert decided["decided_by"] == "adapter" and decided["decision"]["reason"].startswith("the run was interrupted")
    assert stat.S_IMODE(events.stat().st_mode) == 0o600
    assert not (work / "note.md").exists()


def test_a_closed_stdout_still_stops_the_run_and_the_file_ends_with_the_marker(tmp_path: Path, emulator: Emulator) -> None:
    """The reader takes one line and goes: the run ends ``stdout-closed`` (exit 2) as before, and FILE
    has the whole stream."""
    home, work, events = loop_home(tmp_path), workspace(tmp_path), tmp_path / "ev.jsonl"
    argv = [str(METAHARNESS), "run", "b10x", "--decisions", "ask", "--events", str(events), *common(emulator.base_url, work)]
    process = subprocess.Popen(argv, env={"HOME": str(home), "PATH": os.environ["PATH"]}, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    code = process.wait(timeout=90)
    stderr = process.stderr.read().decode()
    assert code == 2 and stderr.startswith("metaharness: stdout-closed: "), stderr
    written = complete_stream(events)
    assert written[0] == json.loads(first) and written[-1]["reason"] == "killed"


@pytest.mark.parametrize("planted", ["file", "link", "dangling link"])
def test_an_existing_name_is_refused_and_never_written_through(tmp_path: Path, planted: str) -> None:
    """FILE is created new: a file already there, or a link planted at the name (to a file or to
    nothing), is ``events-file-unusable`` before anything starts, and the target is untouched."""
    target, events = tmp_path / "target", tmp_path / "ev.jsonl"
    target.write_text("kept\n")
    if planted == "file":
        events.write_text("kept\n")
    else:
        events.symlink_to(target if planted == "link" else tmp_path / "absent")
    work = workspace(tmp_path)
    argv = [str(METAHARNESS), "run", "b10x", "--decisions", "observe", "--events", str(events),
            *common("http://127.0.0.1:9/v1", work)]  # fmt: skip
    done = subprocess.run(argv, env={"HOME": str(loop_home(tmp_path)), "PATH": os.environ["PATH"]},
                          capture_output=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith(f"metaharness: events-file-unusable: --events {events} cannot be created new: ")
    assert target.read_text() == "kept\n" and not (tmp_path / "absent").exists()


@pytest.mark.parametrize("kind", ["b10x", "claude", "codex"])
def test_a_dead_endpoint_is_refused_before_the_spawn(tmp_path: Path, kind: str) -> None:
    """Nothing listens at ``--model-endpoint``: ``endpoint-unreachable`` names it, nothing starts, stdout is empty."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    if kind != "b10x" and pinned_cli(kind) is None:
        pytest.skip(f"the pinned {kind} CLI is not installed")
    home = home_linking_the_clis(tmp_path / "home")
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    argv = [str(METAHARNESS), "run", kind, "--decisions", "observe", "--credentials", "none", "-p", "hi",
            "--model-endpoint", f"http://127.0.0.1:{port}", *(["--model", "m"] if kind == "b10x" else [])]  # fmt: skip
    done = subprocess.run(argv, env={"HOME": str(home), "PATH": os.environ["PATH"]}, capture_output=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith(
        f"metaharness: endpoint-unreachable: --model-endpoint http://127.0.0.1:{port}: nothing accepts a connection at "
        f"127.0.0.1:{port} ("
    ), done.stderr.decode()


def test_events_file_is_created_after_stages_5_to_7_and_left_empty_by_a_later_refusal(tmp_path: Path) -> None:
    """``--events`` FILE is created in stage 8 (docs/hermetic.md#refusal-order): a stage 6 refusal (``cwd-unusable``)
    leaves no FILE; the endpoint's pre-flight, after it, leaves FILE empty, as it leaves stdout."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"HOME": str(loop_home(tmp_path)), "PATH": os.environ["PATH"]}
    early, late = tmp_path / "early.jsonl", tmp_path / "late.jsonl"
    for events, cwd, code in ((early, tmp_path / "absent", "cwd-unusable"), (late, workspace(tmp_path), "endpoint-unreachable")):
        argv = [str(METAHARNESS), "run", "b10x", "--decisions", "observe", "--credentials", "none", "--model", "m",
                "-p", "hi", "--model-endpoint", f"http://127.0.0.1:{port}", "--cwd", str(cwd), "--events", str(events)]  # fmt: skip
        done = subprocess.run(argv, env=env, capture_output=True, timeout=60, check=False)
        assert done.returncode == 2 and done.stdout == b"" and done.stderr.decode().startswith(f"metaharness: {code}: ")
    assert not early.exists() and late.read_bytes() == b"" and stat.S_IMODE(late.stat().st_mode) == 0o600
