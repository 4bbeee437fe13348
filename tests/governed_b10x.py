"""``metaharness run b10x`` run as the installed script against a real ``b10x-emulator`` (docs/adapters/b10x.md): the
child's PATH is built from the caller's HOME, so callers pass a HOME whose ``.local/bin`` links ``LOOP``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from metaharness.pure.events import read_event

VENV_BIN = Path(sys.executable).parent
LOOP = VENV_BIN / "b10x-harness"
EMULATOR = VENV_BIN / "b10x-emulator"
METAHARNESS = VENV_BIN / "metaharness"


def run(home: Path, args: list[str], stdin: bytes = b"", cwd: Path | None = None, timeout: float = 90) -> subprocess.CompletedProcess[bytes]:
    """``metaharness run b10x *args`` with only HOME and PATH in its environment."""
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    return subprocess.run(
        [str(METAHARNESS), "run", "b10x", *args], input=stdin, env=env, cwd=cwd, capture_output=True, timeout=timeout, check=False
    )


def stream(done: subprocess.CompletedProcess[bytes]) -> list[dict]:
    """The run's stdout as events, asserted well formed: seq 1..n and one closing ``stream.closed``."""
    lines = done.stdout.splitlines()
    for number, line in enumerate(lines, start=1):
        assert read_event(line).unwrap().seq == number
    events = [json.loads(line) for line in lines]
    assert [e["event"] for e in events].count("stream.closed") == 1 and events[-1]["event"] == "stream.closed"
    assert events[-1]["events"] == len(events) - 1
    return events


def workspace(tmp_path: Path) -> Path:
    """``tmp_path/ws`` holding one README.md."""
    work = tmp_path / "ws"
    work.mkdir()
    (work / "README.md").write_text("hello harness\n")
    return work


def common(base_url: str, work: Path) -> list[str]:
    """The options every governed run here shares: prompt, model, endpoint and ``--cwd``."""
    return ["-p", "write the note", "--model", "b10x-emulated", "--model-endpoint", base_url, "--cwd", str(work)]
