"""``metaharness doctor KIND`` with its confinement part against the binary's part alone, measured in the same run.

The whole doctor is ``run_doctor(kind)`` (the binary resolved, probed and flag-checked, then the view a run
would build: the substrate's trial and version, the program's closure, the plan); the baseline is the kind's
live doctor alone (``live_adapter_of(kind).doctor()``), the same probes without the view. Each side runs
in a fresh interpreter, the two interleaved so a shared machine's load falls on both alike, and both must
exit alike (the whole doctor also exits 1 when this HOME lacks the kind's login: its credential check). Reported per kind: median and p90 of each side and the ratio of medians (aim ≤ 1.2×). A kind
whose binary is not on ``PATH`` (with this environment's ``bin`` and ``~/.local/bin`` first, where ``b10x-harness`` and the pinned vendor CLIs are linked)
is skipped and named.

Run: ``.venv/bin/python benchmarks/bench_doctor.py [REPEATS]`` (default 8).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from metaharness.pure.adapters import adapter_of
from metaharness.pure.kind import KINDS

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
WHOLE = "import sys; from metaharness.shell.doctor import run_doctor; sys.exit(run_doctor(sys.argv[1]))"
BINARY = "import sys; from metaharness.shell.adapters import live_adapter_of; sys.exit(live_adapter_of(sys.argv[1]).doctor())"


def timed(script: str, kind: str, env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and exit of one fresh interpreter running ``script`` for ``kind``."""
    begin = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, kind], env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - begin
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    return seconds, done.returncode


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-doctor-") as prefix:
        path = f"{Path(sys.executable).parent}:{Path.home() / '.local' / 'bin'}:{os.environ.get('PATH', '')}"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {
            "PATH": path, "PYTHONPYCACHEPREFIX": prefix,
        }  # fmt: skip
        for kind in KINDS:
            if shutil.which(adapter_of(kind).program, path=path) is None:
                print(f"{kind}: skipped, {adapter_of(kind).program} is not on PATH")
                continue
            timed(WHOLE, kind, env)
            whole: list[float] = []
            binary: list[float] = []
            for _ in range(REPEATS):
                (on, code_on), (off, code_off) = timed(WHOLE, kind, env), timed(BINARY, kind, env)
                assert code_on in (code_off, max(code_off, 1)), (code_on, code_off)  # 1 too: a login this HOME lacks
                whole.append(on)
                binary.append(off)
            print(
                f"doctor {kind}: with the view median {statistics.median(whole) * 1000:.0f} ms "
                f"(p90 {p90(whole) * 1000:.0f}), the binary's part alone {statistics.median(binary) * 1000:.0f} ms "
                f"(p90 {p90(binary) * 1000:.0f}) over {REPEATS} runs: "
                f"{statistics.median(whole) / statistics.median(binary):.3f}x (aim <= 1.2x)"
            )


if __name__ == "__main__":
    main()
