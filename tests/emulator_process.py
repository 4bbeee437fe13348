"""Starting ``b10x-emulator`` as a real process for tests: read its one announcement line, yield the
base URL, stop it with SIGTERM on the way out (docs/loop.md#process-and-routes)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EMULATOR = str(Path(sys.executable).parent / "b10x-emulator")


@contextmanager
def running_emulator(*args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``b10x-emulator *args``: yields (base URL, process); the process is stopped and reaped after."""
    process = subprocess.Popen([EMULATOR, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None
        yield json.loads(process.stdout.readline())["base_url"], process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
