"""A confined gemini run's wall time to ``session.started`` with its ``--version`` probe beside the spawn, against
the baseline of the same run under ``--strict-version`` (the probe first, then the spawn), measured in the same
run and interleaved (docs/adapters/gemini.md#version-probe). Aim: below 1.0× by about one Node start.

Run: ``.venv/bin/python benchmarks/bench_gemini_probe.py [pairs]`` (default 3) with the pinned Gemini CLI on the
child's PATH floor (``$HOME/.local/bin/gemini``), bubblewrap installed, and ``b10x-emulator`` beside Python.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
DRIVER = """
import json, sys
from returns.result import Failure
from metaharness.pure.options import RunOptions
from metaharness.shell.gemini.inputs import gathered_inputs
from metaharness.shell.gemini.run import run_gemini
from metaharness.shell.refusals import refuse
options = RunOptions(kind="gemini", **json.loads(sys.argv[1]))
inputs = gathered_inputs(options)
sys.exit(refuse(inputs.failure()) if isinstance(inputs, Failure) else run_gemini(options, inputs.unwrap()))
"""


def to_started(root: str, work: Path, strict: bool) -> float:
    """Seconds from the run's start to its ``session.started`` line; the run is then read to its end."""
    options = {"prompt": "do the task", "credentials": "none", "model_endpoint": root, "decisions": "observe",
               "confine": "on", "cwd": str(work), "strict_version": strict}  # fmt: skip
    began = time.monotonic()
    run = subprocess.Popen([sys.executable, "-c", DRIVER, json.dumps(options)], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
    assert run.stdout is not None
    took = None
    for line in run.stdout:
        if took is None and b'"session.started"' in line:
            took = time.monotonic() - began
    assert run.wait(timeout=180) == 0 and took is not None, "the run failed"
    return took


def main(pairs: int) -> None:
    if shutil.which("bwrap") is None:
        sys.exit("bubblewrap is not installed")
    with tempfile.TemporaryDirectory() as scratch:
        record = Path(scratch) / "emulator.jsonl"
        emulator = subprocess.Popen([str(BIN / "b10x-emulator"), "--scenario", "gemini-write", "--record", str(record)],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            assert emulator.stdout is not None
            root = json.loads(emulator.stdout.readline())["base_url"].removesuffix("/v1")
            serial: list[float] = []
            beside: list[float] = []
            for index in range(pairs):
                for strict, kept in ((True, serial), (False, beside)):
                    work = Path(scratch) / f"work-{index}-{strict}"
                    work.mkdir()
                    kept.append(to_started(root, work, strict))
        finally:
            emulator.terminate()
            emulator.wait(timeout=60)
    before, after = statistics.median(serial), statistics.median(beside)
    print(f"to session.started, median of {pairs}: probe first {before:.2f} s, probe beside {after:.2f} s, "
          f"ratio {after / before:.2f}x")  # fmt: skip
    print(f"  probe first: {', '.join(f'{s:.2f}' for s in serial)}; beside: {', '.join(f'{s:.2f}' for s in beside)}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
