"""Starting ``b10x-emulator`` as a real process for tests: read its one announcement line, yield the
base URL, stop it with SIGTERM on the way out (docs/loop.md#process-and-routes); and the one type the
``emulator`` fixture of ``tests/conftest.py`` yields."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EMULATOR = str(Path(sys.executable).parent / "b10x-emulator")
DEFAULT_SCENARIO = "flat-write"


@contextmanager
def running_emulator(*args: str, stderr: int = subprocess.PIPE) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``b10x-emulator *args``: yields (base URL, process); the process is stopped and reaped after."""
    process = subprocess.Popen([EMULATOR, *args], stdout=subprocess.PIPE, stderr=stderr)
    try:
        assert process.stdout is not None
        yield json.loads(process.stdout.readline())["base_url"], process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


class Emulator(str):
    """A running emulator: the value is its gateway root (the base URL without ``/v1``, what a vendor's
    ``--model-endpoint`` names); ``base_url`` is the loop's (with ``/v1``), ``record`` the file it records to."""

    base_url: str
    record: Path

    @classmethod
    def serving(cls, base_url: str, record: Path) -> Emulator:
        running = cls(base_url.removesuffix("/v1"))
        running.base_url, running.record = base_url, record
        return running


@contextmanager
def started_emulator(scenario: str, record: Path, *options: str) -> Iterator[Emulator]:
    """``b10x-emulator --scenario scenario --record record *options``, running while the block runs."""
    args = ("--scenario", scenario, "--record", str(record), *options)
    with running_emulator(*args, stderr=subprocess.DEVNULL) as (base_url, _):
        yield Emulator.serving(base_url, record)
