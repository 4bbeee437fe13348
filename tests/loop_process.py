"""The real ``b10x-harness`` run directly (no metaharness) against a real ``b10x-emulator`` that
records every request it answers (docs/loop.md#emulator)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metaharness.shell.loop.command import RETRY_WAIT_SCALE

BIN = Path(sys.executable).parent
HARNESS = str(BIN / "b10x-harness")
EMULATOR = str(BIN / "b10x-emulator")
SHORT_RETRY_WAITS = {**os.environ, RETRY_WAIT_SCALE: "0.01"}
"""The environment ``harness`` runs the loop in: its retry waits slept at 1/100 (the loop's hidden testing knob)."""


@contextmanager
def emulator(scenario: str, record: Path, *options: str) -> Iterator[str]:
    """``b10x-emulator --scenario scenario --record record *options``: yields its base URL, SIGTERM after."""
    process = subprocess.Popen(
        [EMULATOR, "--scenario", scenario, "--record", str(record), *options], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield json.loads(process.stdout.readline())["base_url"]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


class Run:
    """One finished loop run: its record lines, exit code, stderr and the requests the emulator saw."""

    def __init__(self, lines: list[dict[str, Any]], code: int, stderr: str, requests: list[dict[str, Any]]) -> None:
        self.lines = lines
        self.code = code
        self.stderr = stderr
        self.requests = requests

    def kinds(self) -> list[str]:
        return [line["kind"] for line in self.lines]

    def after_started(self) -> list[dict[str, Any]]:
        assert self.lines[0]["kind"] == "started"
        return self.lines[1:]


def harness(
    scenario: str,
    wire: str,
    workspace: Path,
    *extra: str,
    stdin: bytes = b"",
    timeout: float = 60,
    record_bodies: bool = False,
    env: Mapping[str, str] | None = None,
) -> Run:
    """``b10x-harness run --json --no-session`` in ``workspace`` against the emulator playing ``scenario``
    (recording request bodies when ``record_bodies``), with ``env`` added to its environment."""
    record = workspace.parent / f"{scenario}-{wire}.record.jsonl"
    record.unlink(missing_ok=True)
    with emulator(scenario, record, *(("--record-bodies",) if record_bodies else ())) as base_url:
        argv = [HARNESS, "run", "--json", "--no-session", "--workspace", str(workspace), "--base-url", base_url]
        argv += ["--model", "b10x-emulated", "--wire", wire, *extra, "--input", "go"]
        done = subprocess.run(argv, input=stdin, capture_output=True, env={**SHORT_RETRY_WAITS, **(env or {})},
                              timeout=timeout, check=False)
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    requests = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return Run(lines, done.returncode, done.stderr.decode(), requests)
