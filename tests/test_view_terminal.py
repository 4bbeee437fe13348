"""``metaharness-view`` on a real terminal: a live ``metaharness run b10x --decisions ask`` against the
real emulator, piped into the view inside a tmux pane (a real pseudo-terminal and a real terminal
emulator, whose screen the test reads). The test answers the asked call over the run's stdin only
after the pane shows its deadline counting down (docs/view.md)."""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from governed_b10x import LOOP, METAHARNESS, VENV_BIN, workspace
from helpers.emulator import Emulator

TMUX = shutil.which("tmux")
VIEW = VENV_BIN / "metaharness-view"
SIZE = (200, 70)
WAIT = 60.0
REASON = "notes are written in the next step"

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is absent (scripts/test installs it)")


class Pane:
    """One tmux server on a private socket with one pane running ``command``."""

    def __init__(self, socket: Path, command: str, env: dict[str, str]) -> None:
        self.socket = socket
        wrapped = "env -i " + " ".join(shlex.quote(f"{key}={value}") for key, value in env.items()) + " sh -c " + shlex.quote(command)
        self.tmux("new-session", "-d", "-x", str(SIZE[0]), "-y", str(SIZE[1]), wrapped, ";",
                  "set-option", "remain-on-exit", "on")  # fmt: skip

    def tmux(self, *args: str) -> str:
        done = subprocess.run([str(TMUX), "-S", str(self.socket), *args], capture_output=True, check=True, timeout=30)
        return done.stdout.decode("utf-8", errors="replace")

    def screen(self, *, colours: bool = False) -> str:
        return self.tmux("capture-pane", "-p", "-J", *(["-e"] if colours else []), "-S", "-", "-E", "-")

    def wait_for(self, test: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            shown = self.screen()
            if test(shown):
                return shown
            time.sleep(0.2)
        raise AssertionError(f"the pane never showed {what}:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run([str(TMUX), "-S", str(self.socket), "kill-server"], capture_output=True, check=False, timeout=30)


def open_writer(fifo: Path) -> int:
    """The FIFO opened for writing once the pane's shell has opened it for reading."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            descriptor = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:
            if error.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
            continue
        os.set_blocking(descriptor, True)
        return descriptor


COUNTDOWN = re.compile(r"asks the embedder — answer due, (\d+)s left")


def test_an_asked_call_counts_down_then_shows_its_decision_and_the_final_table(
    tmp_path: Path, emulator: Emulator
) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    work = workspace(tmp_path)
    fifo, raw, exit_file = tmp_path / "commands.fifo", tmp_path / "raw.jsonl", tmp_path / "view-exit"
    os.mkfifo(fifo)
    run = [str(METAHARNESS), "run", "b10x", "--decisions", "ask", "--quiet", "-p", "write the note", "--model", "b10x-emulated",
           "--model-endpoint", emulator.base_url, "--cwd", str(work)]  # fmt: skip
    command = (f"{shlex.join(run)} <{shlex.quote(str(fifo))} | tee {shlex.quote(str(raw))} | {shlex.quote(str(VIEW))}; "
               f"echo $? >{shlex.quote(str(exit_file))}")  # fmt: skip
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TERM": "screen-256color", "LANG": "C.UTF-8"}
    pane = Pane(tmp_path / "tmux.sock", command, env)
    writer = -1
    try:
        writer = open_writer(fifo)
        first = pane.wait_for(lambda shown: COUNTDOWN.search(shown) is not None, "the asked call's countdown")
        first_left = int(COUNTDOWN.findall(first)[-1])
        assert first_left <= 25
        assert "file_write call_b10x_001" in first
        later = pane.wait_for(
            lambda shown: any(int(left) < first_left for left in COUNTDOWN.findall(shown)), "the countdown moving"
        )
        (tmp_path / "screen-asking.txt").write_text(later, encoding="utf-8")
        answer = {"format": "metaharness.command/1", "id": "answer-1", "command": "tool.decide",
                  "call_id": "call_b10x_001", "decision": {"decision": "deny", "reason": REASON}}  # fmt: skip
        os.write(writer, json.dumps(answer).encode() + b"\n")
        final = pane.wait_for(lambda shown: "the stream implies exit" in shown, "the end of the run")
        coloured = pane.screen(colours=True)
        pane.wait_for(lambda _shown: exit_file.exists() and exit_file.read_text().strip() != "", "the pipeline's exit status")
    finally:
        if writer >= 0:
            os.close(writer)
        pane.close()
    (tmp_path / "screen-final.txt").write_text(final, encoding="utf-8")
    assert exit_file.read_text().strip() == "0"
    assert COUNTDOWN.search(final) is None, "the countdown line was replaced in place"
    assert re.search(rf"● file_write call_b10x_001 .*→ deny by embedder on control_request, \d+ms: {REASON}", final)
    assert "⚠ COVERAGE_GAP" in final and "that is what the tool said" in final
    assert "decision census: allowed=0 denied=1 replaced=0 abstained=0" in final
    assert "hermetic rows, as the run checked them against the record" in final
    rows = {cells[0]: cells[1:3] for cells in (
        [cell.strip() for cell in line.split("│")[1:-1]] for line in final.splitlines() if line.startswith("│ H")
    )}  # fmt: skip
    assert rows["H3"] == ["ok", "imposed"] and rows["H7"] == ["gap", "unavailable"]
    assert re.search(r"\x1b\[[0-9;]*31m[^\x1b]*gap", coloured), "a gap row is painted red"
    assert re.search(r"\x1b\[[0-9;]*32m[^\x1b]*ok", coloured), "an ok row is painted green"
    assert "stream: complete — 14 event(s) before the marker, reason completed" in final
    assert "child exit: 0; the stream implies exit 0" in final
    events = [json.loads(line) for line in raw.read_bytes().splitlines()]
    decided = next(event for event in events if event["event"] == "tool.decided")
    assert (decided["decided_by"], decided["decision"]) == ("embedder", {"decision": "deny", "reason": REASON})
    assert not (work / "note.md").exists()
