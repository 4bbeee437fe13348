"""Progress on a terminal's stderr (docs/cli.md#progress-on-stderr): ``metaharness run … > ev.jsonl``
in a real pseudo-terminal (tmux) prints a start line, a line per call and a summary there, and the
stream on stdout is only events; ``--quiet`` prints none of it. The run is the project's loop against
the real ``b10x-emulator``, its one write denied by the example frame."""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path

import pytest
from governed_b10x import LOOP, METAHARNESS, common, workspace
from helpers.emulator import Emulator
from tmux_pane import TMUX, WAIT, Pane

ROOT = Path(__file__).resolve().parent.parent
FRAME = ROOT / "examples" / "step.frame.json"

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is absent (scripts/test installs it)")


def run_in_pane(tmp_path: Path, emulator: Emulator, *extra: str) -> tuple[str, list[dict]]:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    events, status = tmp_path / "ev.jsonl", tmp_path / "status"
    run = [str(METAHARNESS), "run", "b10x", "--frame", str(FRAME), *extra, *common(emulator.base_url, workspace(tmp_path))]
    command = f"{shlex.join(run)} >{shlex.quote(str(events))}; echo $? >{shlex.quote(str(status))}"
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "screen-256color", "LANG": "C.UTF-8"}
    pane = Pane(tmp_path / "tmux.sock", command, env)
    try:
        deadline = time.monotonic() + WAIT
        while not (status.exists() and status.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.1)
        shown = pane.screen()
    finally:
        pane.close()
    assert status.read_text().strip() == "0", shown
    return shown, [json.loads(line) for line in events.read_bytes().splitlines()]


def test_a_run_on_a_terminal_shows_its_start_each_call_and_a_summary_on_stderr(tmp_path: Path, emulator: Emulator) -> None:
    shown, events = run_in_pane(tmp_path, emulator)
    run = events[0]["run"]
    progress = [line for line in shown.splitlines() if line.startswith("metaharness: ")]
    assert progress[0].startswith(f"metaharness: run {run} started: b10x 0.1.0 · model b10x-emulated · decisions frame · frame ")
    assert progress[1].startswith("metaharness: call file_write call_b10x_001 → deny by frame on control_request")
    assert progress[2] == f"metaharness: run {run} closed completed: 1 call(s), allowed=0 denied=1 replaced=0 abstained=0"
    assert len(progress) == 3 and events[-1]["event"] == "stream.closed"


def test_quiet_prints_no_progress(tmp_path: Path, emulator: Emulator) -> None:
    shown, events = run_in_pane(tmp_path, emulator, "--quiet")
    assert [line for line in shown.splitlines() if line.startswith("metaharness: ")] == []
    assert events[-1]["event"] == "stream.closed"
