"""``metaharness`` start-up to a refusal against ``python -c pass``, measured in the same run.

The refusal is ``metaharness run b10x -p x --decisions frame`` (the console script) (``frame-required``, exit 2): the CLI parses
the verb's options, gathers the audit facts and refuses before any launch. Both sides run as fresh
interpreters from this virtual environment, interleaved so a shared machine's load falls on both alike,
with their bytecode cached in a scratch ``PYTHONPYCACHEPREFIX`` (warmed once, as an installed package has
it). Reported: median and p90 of each, the difference (aim: the refusal ≤ 50 ms on this machine) and the
ratio of medians.

Run: ``.venv/bin/python benchmarks/bench_startup.py [REPEATS]`` (default 40).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
REFUSAL = [str(Path(sys.executable).with_name("metaharness")), "run", "b10x", "-p", "x", "--decisions", "frame"]
BASELINE = [sys.executable, "-c", "pass"]


def timed(argv: list[str], env: dict[str, str], code: int) -> float:
    """Wall seconds of one ``argv`` to its exit, which must be ``code``."""
    begin = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=tempfile.gettempdir(), capture_output=True, check=False)
    seconds = time.perf_counter() - begin
    assert done.returncode == code, done.stderr
    if code == 2:
        assert done.stderr.startswith(b"metaharness: frame-required:"), done.stderr
    return seconds


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as prefix:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPYCACHEPREFIX": prefix}
        timed(REFUSAL, env, 2)
        timed(BASELINE, env, 0)
        refusal: list[float] = []
        baseline: list[float] = []
        for _ in range(REPEATS):
            baseline.append(timed(BASELINE, env, 0))
            refusal.append(timed(REFUSAL, env, 2))
    ms = {name: (statistics.median(v) * 1000, p90(v) * 1000) for name, v in (("python", baseline), ("refusal", refusal))}
    print(f"python -c pass: median {ms['python'][0]:.1f} ms, p90 {ms['python'][1]:.1f} ms ({REPEATS} runs)")
    print(f"metaharness to frame-required: median {ms['refusal'][0]:.1f} ms, p90 {ms['refusal'][1]:.1f} ms")
    print(
        f"refusal - python: {ms['refusal'][0] - ms['python'][0]:.1f} ms; refusal / python: "
        f"{ms['refusal'][0] / ms['python'][0]:.2f}x (aim: refusal <= 50 ms) in {Path(sys.executable).parent.parent}"
    )


if __name__ == "__main__":
    main()
