"""``metaharness project`` streams (docs/cli.md#project): its peak memory at 50k and 400k event lines, and its
time against a plain msgspec decode of the same lines, measured in the same run.

The stream is built from b10x's golden vector (``vectors/b10x/golden/loop.expected.jsonl``): its opening
``session.started``, then its middle (two turns: usage, a read call and its result, text) repeated with fresh
call ids and seq numbers, then its ``session.ended`` and a ``stream.closed`` counting every line before it.
With ``--from`` the input is instead b10x's golden record (``loop.jsonl``) built the same way, and the
projection maps it as ``replay`` does (``project --from b10x``). Each measurement runs in a fresh interpreter
(``ru_maxrss`` is per process): the baseline decodes every line with ``msgspec.json.decode``; the projection
runs ``metaharness project FILE --out /dev/null`` in-process.
Reported: peak RSS of each at both sizes and the 400k/50k ratio (flat: near 1), the projection's wall and CPU
time over the decode's, median and p90 of REPEATS interleaved runs, and per line (the 400k−50k difference,
which leaves out the verb's start-up). Aim: the 400k/50k memory ratio ≤ 1.2.

Run: ``.venv/bin/python benchmarks/bench_project.py [REPEATS] [--from]``.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "vectors" / "b10x" / "golden"
REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 3
FROM = "--from" in sys.argv[1:]
VECTOR = GOLDEN / ("loop.jsonl" if FROM else "loop.expected.jsonl")
SIZES = (50_000, 400_000)
_SEQ = re.compile(rb'"seq":\d+,')
_CALL = b"call_b10x_001"

DECODE = """
import msgspec, resource, sys, time
started = time.perf_counter()
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        msgspec.json.decode(line)
usage = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
"""

PROJECT = """
import resource, sys, time
from metaharness.shell.cli import cli
started = time.perf_counter()
try:
    cli.main(["project", sys.argv[1], "--out", "/dev/null", *sys.argv[2:]], standalone_mode=False)
except SystemExit:
    pass
usage = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
"""


def record(lines: int, path: Path) -> None:
    """A b10x record of about ``lines`` lines: the record's first line, its middle repeated with fresh ids, its end."""
    golden = VECTOR.read_bytes().splitlines()
    opening, middle, closing = golden[0], golden[1:-1], golden[-1]
    with path.open("wb") as out:
        out.write(opening + b"\n")
        written, cycle = 2, 0
        while written + len(middle) <= lines:
            cycle += 1
            out.write(b"".join(line.replace(_CALL, _CALL + f"_{cycle:07d}".encode()) + b"\n" for line in middle))
            written += len(middle)
        out.write(closing + b"\n")


def stream(lines: int, path: Path) -> None:
    """An event stream of about ``lines`` lines: the vector's opening, its middle repeated, its end, closed."""
    golden = VECTOR.read_bytes().splitlines()
    opening, middle, ending, closing = golden[0], golden[1:-2], golden[-2], golden[-1]
    seq = 0
    with path.open("wb") as out:

        def put(line: bytes) -> None:
            nonlocal seq
            seq += 1
            out.write(_SEQ.sub(f'"seq":{seq},'.encode(), line, count=1) + b"\n")

        put(opening)
        cycle = 0
        while seq + len(middle) + 2 <= lines:
            cycle += 1
            for line in middle:
                put(line.replace(_CALL, _CALL + f"_{cycle:07d}".encode()))
        put(ending)
        put(closing.replace(b'"events":10', f'"events":{seq}'.encode()))


def measure(script: str, *args: str) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in KiB) of ``script`` run on ``args`` in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True)
    wall, cpu, rss = done.stdout.split()
    return float(wall), float(cpu), int(rss)


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main() -> None:
    summary: dict[str, float | str] = {"input": "b10x record, --from b10x" if FROM else "event stream"}
    with tempfile.TemporaryDirectory() as scratch:
        paths = {size: Path(scratch, f"events-{size}.jsonl") for size in SIZES}
        for size, path in paths.items():
            (record if FROM else stream)(size, path)
        extra = ("--from", "b10x") if FROM else ()
        results: dict[str, list[tuple[float, float, int]]] = {}
        for _ in range(REPEATS):
            for size, path in paths.items():
                results.setdefault(f"decode {size}", []).append(measure(DECODE, str(path)))
                results.setdefault(f"project {size}", []).append(measure(PROJECT, str(path), *extra))
        median = {name: tuple(statistics.median(run[i] for run in runs) for i in range(3))
                  for name, runs in results.items()}  # fmt: skip
        for name, (wall, cpu, rss) in median.items():
            print(f"{name:>15}: {wall * 1000:8.0f} ms wall, {cpu * 1000:8.0f} ms CPU, peak RSS {rss / 1024:6.1f} MiB")
        small, large = SIZES
        growth = median[f"project {large}"][2] / median[f"project {small}"][2]
        print(f"project peak RSS {large // 1000}k/{small // 1000}k: {growth:.2f} (aim ≤ 1.2)")
        summary["rss_growth"] = round(growth, 2)
        for size in SIZES:
            for index, clock in ((0, "wall"), (1, "cpu")):
                ratios = [p[index] / d[index]
                          for p, d in zip(results[f"project {size}"], results[f"decode {size}"], strict=True)]  # fmt: skip
                ratio = median[f"project {size}"][index] / median[f"decode {size}"][index]
                print(f"project/decode {clock} time at {size // 1000}k lines: {ratio:.2f}× median, {p90(ratios):.2f}× p90")
                summary[f"{clock}_ratio_{size // 1000}k"] = round(ratio, 2)
        marginal = (median[f"project {large}"][0] - median[f"project {small}"][0]) / (
            median[f"decode {large}"][0] - median[f"decode {small}"][0]
        )
        print(f"project/decode time per line ({large // 1000}k − {small // 1000}k, start-up left out): {marginal:.2f}×")
        summary["time_ratio_per_line"] = round(marginal, 2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
