"""A full disk while the transcript is written (docs/cli.md#keeping-the-stream): the scratch root sits on a
tiny tmpfs of its own (``bwrap --size``), which the test fills while the run waits on its first asked call,
a command whose output (about 100 KiB) the record then carries past the transcript's allocated page; the
run goes on, its stream says ``TRANSCRIPT_INCOMPLETE`` and closes, and it ends with the refusal
``transcript-write-failed`` (exit 2), never ``internal-error``. On the real Claude Code, and on the loop
under a file-size limit."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from codex_process import of, well_formed
from governed_b10x import LOOP
from helpers.emulator import running_emulator
from vendor_cli import PINS, pinned_cli

from metaharness.shell.transcript_copy import TranscriptCopy

VENV_BIN = Path(sys.executable).parent
TMPFS_BYTES = 8 * 1024 * 1024
LOUD = "seq 1 20000"
"""A command whose output the record holds, far past one page of the tmpfs."""


def children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def fill(tiny: str, bwrap_pid: int) -> None:
    """Fill the run's tmpfs, reached through metaharness's own root (its mount namespace), to ENOSPC."""
    (metaharness,) = children(bwrap_pid)
    block = b"\0" * 65536
    descriptor = os.open(f"/proc/{metaharness}/root{tiny}/filler", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while True:
            os.write(descriptor, block)
    except OSError as error:
        assert error.errno == errno.ENOSPC
    finally:
        os.close(descriptor)


def full_disk_run(tmp_path: Path, argv: list[str], env: dict[str, str]) -> tuple[list[dict], int, str]:
    """``metaharness run … --decisions ask --confine off`` in a mount namespace whose TMPDIR is a small
    tmpfs; at the first asked call the tmpfs is filled, then the call is allowed."""
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    wrapped = ["bwrap", "--dev-bind", "/", "/", "--size", str(TMPFS_BYTES), "--tmpfs", str(tiny), "--",
               "/usr/bin/env", f"TMPDIR={tiny}", *argv, "--decisions", "ask", "--confine", "off"]  # fmt: skip
    process = subprocess.Popen(wrapped, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    lines: list[bytes] = []
    try:
        for line in iter(process.stdout.readline, b""):
            lines.append(line)
            event = json.loads(line)
            if event["event"] == "tool.requested" and event.get("decision_required"):
                fill(str(tiny), process.pid)
                command = {"format": "metaharness.command/1", "id": "c1", "command": "tool.decide",
                           "call_id": event["call_id"], "decision": {"decision": "allow"}}  # fmt: skip
                process.stdin.write(json.dumps(command).encode() + b"\n")
                process.stdin.flush()
        process.stdin.close()
        stderr = process.stderr.read().decode()
        code = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return well_formed(lines), code, stderr


def small_files() -> None:
    """In the run's process before it starts: no file it writes may grow past 1,000 bytes."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))


def named_outcome(events: list[dict], code: int, stderr: str, error: str = os.strerror(errno.ENOSPC)) -> None:
    (incomplete,) = [e for e in of(events, "warning") if e["code"] == "TRANSCRIPT_INCOMPLETE"]
    assert error in incomplete["message"], incomplete
    assert events.index(incomplete) < len(events) - 1 and events[-1]["event"] == "stream.closed"
    assert "internal-error" not in stderr and "Traceback" not in stderr, stderr
    assert "metaharness: transcript-write-failed: " in stderr and code == 2, (code, stderr)


def test_the_loops_transcript_past_a_file_size_limit_is_a_named_outcome(tmp_path: Path) -> None:
    """The loop's record holds no tool output, so what follows its first asked call stays inside the page
    the transcript already has; a file-size limit (``RLIMIT_FSIZE``, ``EFBIG``) of 1,000 bytes, past the
    loop's first line, makes the transcript's later write fail the same way. Stdout is a pipe, which no
    such limit touches."""
    home, work = tmp_path / "home", tmp_path / "ws"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    work.mkdir()
    with running_emulator("--scenario", "loop-run-steps") as (base_url, _):
        argv = [str(VENV_BIN / "metaharness"), "run", "b10x", "-p", f"do the step\n$ {LOUD}\n",
                "--model", "b10x-emulated", "--model-endpoint", base_url, "--cwd", str(work), "--allow-program", "seq",
                "--decisions", "observe"]  # fmt: skip
        done = subprocess.run(argv, env={"HOME": str(home), "PATH": os.environ["PATH"]}, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=120, check=False, preexec_fn=small_files)  # fmt: skip
    events, stderr = well_formed(done.stdout.splitlines(keepends=True)), done.stderr.decode()
    named_outcome(events, done.returncode, stderr, os.strerror(errno.EFBIG))
    assert of(events, "session.ended"), "the run went on past the lost transcript"


@pytest.mark.skipif(pinned_cli("claude") is None, reason=f"the pinned Claude Code {PINS['claude']} is not installed")
@pytest.mark.usefixtures("own_home")
def test_claudes_transcript_on_a_full_disk_is_a_named_outcome(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with running_emulator("--scenario", "claude-bash-steps") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "claude", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "--cwd", str(work), "-p", f"do the step\n$ {LOUD}\n"]  # fmt: skip
        events, code, stderr = full_disk_run(tmp_path, argv, dict(os.environ))
    named_outcome(events, code, stderr)


def test_a_write_to_a_full_device_is_kept_as_an_error_never_raised(tmp_path: Path) -> None:
    """``/dev/full`` answers every write ``ENOSPC``: nothing raises, the lines after are dropped."""
    with TranscriptCopy("/dev/full") as copy:
        assert copy.write(b"one line\n") == 9 and copy.write(b"two\n") == 4
    assert copy.error == os.strerror(errno.ENOSPC) and copy.lines == 0
    (warning,) = copy.late_events()
    assert warning.code == "TRANSCRIPT_INCOMPLETE"
    refusal = copy.refusal()
    assert refusal is not None and refusal.code == "transcript-write-failed"
    with TranscriptCopy(str(tmp_path / "kept.jsonl")) as kept:
        kept.write(b"a\nb\n")
    assert kept.error is None and kept.lines == 2 and kept.late_events() == () and kept.refusal() is None
