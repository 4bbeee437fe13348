"""The terminal prompt on ``/dev/tty`` (docs/loop.md#approvals): the real loop under a pseudo-terminal it controls."""

from __future__ import annotations

import os
import pty
import re
import selectors
import subprocess
import time
from pathlib import Path

import pytest
from loop_process import HARNESS, emulator


def _run_on_a_terminal(argv: list[str], answers: list[bytes]) -> tuple[int, str]:
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    output = b""
    pending = list(answers)
    deadline = time.monotonic() + 30
    watching = selectors.DefaultSelector()  # not select(): a worker's descriptors may lie past FD_SETSIZE
    watching.register(fd, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if watching.select(0.2):
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
            if pending and output.count(b"approve? ") > len(answers) - len(pending):
                os.write(fd, pending.pop(0))
    watching.close()
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), output.decode("utf-8", errors="replace").replace("\r\n", "\n")


@pytest.mark.parametrize(("mode", "answer", "approved"), [("prompt", b"y\n", True), ("auto", b"n\n", False)])
def test_the_terminal_prompt_decides(mode: str, answer: bytes, approved: bool, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with emulator("flat-write", tmp_path / "r.jsonl") as base_url:
        argv = [HARNESS, "run", "--json", "--no-session", "--approve", mode, "--workspace", str(workspace)]
        code, output = _run_on_a_terminal(
            [*argv, "--base-url", base_url, "--model", "b10x-emulated", "--input", "go"], [answer]
        )
    assert "file_write  note.md  (23 bytes)" in output
    assert "approve? [y]es once · [n]o · [a]lways for `file_write` > " in output
    assert re.search(rf'"approval-resolved","call_id":"call_b10x_001","approved":{str(approved).lower()}', output)
    assert (workspace / "note.md").exists() is approved
    assert code == 0


def test_prompt_without_a_terminal_is_refused_at_start(tmp_path: Path) -> None:
    argv = [HARNESS, "run", "--json", "--no-session", "--approve", "prompt", "--workspace", str(tmp_path)]
    argv += ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--input", "go"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False, start_new_session=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert done.stdout == (
        '{"kind":"refused","reason":"--approve prompt needs a terminal, and /dev/tty cannot be opened"}\n'
    )
