"""``metaharness replay`` streams (docs/events.md#replay): its peak memory at 50k and 400k record lines,
and its time against a plain msgspec decode of the same lines, measured in the same run.

A b10x record is built from the golden loop record of the vectors: its opening line, then its middle
(a turn with a read call, a turn of text) repeated with fresh call ids, then its ``finished`` line.
Each measurement runs in a fresh interpreter (``ru_maxrss`` is per process): the baseline decodes
every line with ``msgspec.json.decode``; the replay runs ``metaharness replay b10x`` in-process with
stdout to ``/dev/null``. Reported: peak RSS of each at both sizes and the 400k/50k ratio (flat: near 1),
and the replay's time over the decode's, median of REPEATS interleaved runs. Aims: the 400k/50k memory
ratio ≤ 1.2; replay ≤ 3× the decode.

Run: ``.venv/bin/python benchmarks/bench_replay.py [REPEATS]``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "vectors" / "b10x" / "golden" / "loop.jsonl"
REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
SIZES = (50_000, 400_000)

DECODE = """
import msgspec, resource, sys, time
started = time.perf_counter()
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        msgspec.json.decode(line)
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

REPLAY = """
import os, resource, sys, time
sys.stdout = open(os.devnull, "w")
from metaharness.shell.cli import cli
started = time.perf_counter()
try:
    cli.main(["replay", "b10x", sys.argv[1]], standalone_mode=False)
except SystemExit:
    pass
sys.stderr.write(f"{time.perf_counter() - started} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n")
"""


def record(lines: int, path: Path) -> None:
    golden = GOLDEN.read_bytes().splitlines()
    opening, middle, closing = golden[0], golden[1:-1], golden[-1]
    with path.open("wb") as out:
        out.write(opening + b"\n")
        written = 2
        cycle = 0
        while written + len(middle) <= lines:
            cycle += 1
            for line in middle:
                out.write(line.replace(b"call_b10x_001", f"call_{cycle:07d}".encode()) + b"\n")
            written += len(middle)
        out.write(closing + b"\n")


def measure(script: str, path: Path) -> tuple[float, int]:
    """(seconds, peak RSS in KiB) of ``script`` run on ``path`` in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True)
    seconds, rss = (done.stdout or done.stderr).split()
    return float(seconds), int(rss)


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        paths = {size: Path(scratch, f"{size}.jsonl") for size in SIZES}
        for size, path in paths.items():
            record(size, path)
        results: dict[str, list[tuple[float, int]]] = {}
        for _ in range(REPEATS):
            for size, path in paths.items():
                results.setdefault(f"decode {size}", []).append(measure(DECODE, path))
                results.setdefault(f"replay {size}", []).append(measure(REPLAY, path))
    median = {name: (statistics.median(s for s, _ in runs), statistics.median(r for _, r in runs)) for name, runs in results.items()}
    for name, (seconds, rss) in median.items():
        print(f"{name:>15}: {seconds * 1000:8.0f} ms, peak RSS {rss / 1024:6.1f} MiB")
    small, large = SIZES
    print(f"replay peak RSS {large // 1000}k/{small // 1000}k: {median[f'replay {large}'][1] / median[f'replay {small}'][1]:.2f} (aim ≤ 1.2)")
    for size in SIZES:
        ratio = median[f"replay {size}"][0] / median[f"decode {size}"][0]
        print(f"replay/decode time at {size // 1000}k lines: {ratio:.2f}× (aim ≤ 3)")
    print(json.dumps({name: {"ms": round(s * 1000), "rss_kib": r} for name, (s, r) in median.items()}))


if __name__ == "__main__":
    main()
