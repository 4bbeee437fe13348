"""``metaharness`` start-up to a refusal against ``python -c pass``, measured in the same run.

Three refusals through the console script, each exit 2:

- ``run b10x --bogus``: a parse error (``usage``), decided by click before any stage;
- ``run b10x -p x --decisions frame``: ``frame-required``, after stages 2–4 (the options checked, the
  audit facts gathered) and before any launch;
- ``run claude -p x --frame /nonexistent --credentials none``: ``frame-unreadable``, stage 6, inside the
  kind's run module (which imports its whole launch path first).

Beside them, the floor the CLI cannot go below: a fresh interpreter importing only ``click``, ``msgspec``
and ``returns.result`` (the parser, the struct library every value is, the ``Result`` every stage returns).
Every side runs as a fresh interpreter from this virtual environment, interleaved so a shared machine's load
falls on all alike, with their bytecode cached in a scratch ``PYTHONPYCACHEPREFIX`` (warmed once, as an
installed package has it). Reported: median and p90 of each, its ratio of medians to ``python -c pass`` and
its difference (aim: a refusal ≤ 50 ms where python alone takes 10 ms, that is ≤ 5×).

Run: ``.venv/bin/python benchmarks/bench_startup.py [REPEATS]`` (default 30).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
SCRIPT = str(Path(sys.executable).with_name("metaharness"))
SIDES: dict[str, tuple[list[str], int, bytes]] = {
    "python -c pass": ([sys.executable, "-c", "pass"], 0, b""),
    "import click, msgspec, returns": ([sys.executable, "-c", "import click, msgspec, returns.result"], 0, b""),
    "run b10x --bogus": ([SCRIPT, "run", "b10x", "--bogus"], 2, b"metaharness: usage: No such option '--bogus'."),
    "frame-required": ([SCRIPT, "run", "b10x", "-p", "x", "--decisions", "frame"], 2, b"metaharness: frame-required:"),
    "frame-unreadable": (
        [SCRIPT, "run", "claude", "-p", "x", "--frame", "/nonexistent", "--credentials", "none"],
        2,
        b"metaharness: frame-unreadable:",
    ),
}


def timed(argv: list[str], env: dict[str, str], code: int, stderr: bytes) -> float:
    """Wall seconds of one ``argv`` to its exit, which must be ``code`` with stderr starting ``stderr``."""
    begin = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=tempfile.gettempdir(), capture_output=True, check=False)
    seconds = time.perf_counter() - begin
    assert done.returncode == code and done.stderr.startswith(stderr), done.stderr
    return seconds


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def main() -> None:
    samples: dict[str, list[float]] = {name: [] for name in SIDES}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as prefix:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPYCACHEPREFIX": prefix}
        for argv, code, stderr in SIDES.values():
            timed(argv, env, code, stderr)
        for _ in range(REPEATS):
            for name, (argv, code, stderr) in SIDES.items():
                samples[name].append(timed(argv, env, code, stderr))
    base = statistics.median(samples["python -c pass"]) * 1000
    print(f"{REPEATS} interleaved runs each, in {Path(sys.executable).parent.parent}")
    for name, values in samples.items():
        median, tail = statistics.median(values) * 1000, p90(values) * 1000
        print(f"{name:32} median {median:6.1f} ms, p90 {tail:6.1f} ms; {median / base:5.2f}x python, +{median - base:.1f} ms")
    print("aim: a refusal <= 50 ms where python -c pass takes 10 ms (<= 5x)")


if __name__ == "__main__":
    main()
