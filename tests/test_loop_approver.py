"""The caller seam's reading rules (docs/loop.md#caller-seam): one line per asking call, never more, never a hang."""

from __future__ import annotations

import io
import json
import subprocess
import time
from pathlib import Path

from loop_process import HARNESS, emulator

from metaharness.shell.loop.approver import CallerApprover, Verdict
from metaharness.shell.loop.cancel import CancelToken

ALLOW = b'{"call_id":"c","decision":"allow"}\n'


def approver(data: bytes) -> CallerApprover:
    return CallerApprover(io.BytesIO(data), CancelToken(None, time.monotonic()))


def test_an_over_long_line_is_unreadable_and_the_next_call_reads_a_fresh_line() -> None:
    seam = approver(b"x" * 70000 + b"\n" + ALLOW)
    first = seam.decide("c", "file_write", "")
    assert first == Verdict(
        False,
        "the caller's answer could not be read",
        "the answer for c could not be read: the line is over the 65536 byte bound",
    )
    assert seam.decide("c", "file_write", "") == Verdict(True)


def test_eof_denies_every_later_call_with_one_warning() -> None:
    seam = approver(ALLOW)
    assert seam.decide("c", "file_write", "") == Verdict(True)
    closed = seam.decide("c", "file_write", "")
    assert closed.warning == "the answer for c could not be read: stdin is closed" and not closed.approved
    assert seam.decide("c", "run", "") == Verdict(False, "the caller's answer could not be read")


def test_the_deadline_does_not_bound_the_wait_for_the_caller(tmp_path: Path) -> None:
    """A 3 s deadline, past a loaded machine's start-up to the asked call (a 600 ms one could expire in
    turn 1's request); the answer comes 3 s after the ask, so the deadline has passed whatever the load: the
    loop is silent while it waits, so there is no event to wait on but the clock."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with emulator("flat-write", tmp_path / "r.jsonl") as base_url:
        process = subprocess.Popen(
            [HARNESS, "run", "--json", "--no-session", "--approve", "caller", "--max-duration-ms", "3000",
             "--workspace", str(workspace), "--base-url", base_url, "--model", "b10x-emulated", "--input", "go"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        assert process.stdin is not None and process.stdout is not None
        lines = []
        while not lines or lines[-1]["kind"] != "approval-required":
            lines.append(json.loads(process.stdout.readline()))
        time.sleep(3.0)
        process.stdin.write(b'{"call_id":"call_b10x_001","decision":"allow"}\n')
        process.stdin.flush()
        out, _ = process.communicate(timeout=60)
    rest = [json.loads(line) for line in out.splitlines()]
    assert rest == [
        {"kind": "approval-resolved", "call_id": "call_b10x_001", "approved": True},
        {"kind": "tool-completed", "call_id": "call_b10x_001", "failed": True},
        {"kind": "finished", "stop": {"kind": "deadline", "limit_ms": 3000}, "turns": 1},
    ]
    assert not (workspace / "note.md").exists()
    assert process.returncode == 2
