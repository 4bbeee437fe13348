"""``metaharness replay`` streams (docs/events.md#replay): its peak memory at 50k and 400k record lines,
and its time against a plain msgspec decode of the same lines, measured in the same run, for b10x and codex (and claude and gemini when named).

Each kind's record is built from one of its vectors: its opening lines, then its middle (b10x: a turn with a
read call and a turn of text; codex: a custom tool call, its completion and output, token counts and a
message; claude: a tool call, its result and a message; gemini: a shell call, its result and a message in two
deltas) repeated with fresh call and item ids, then its closing line. Each measurement runs in a fresh
interpreter (``ru_maxrss`` is per process) with its bytecode cached, after one replay that is not counted:
the baseline decodes every line with ``msgspec.json.decode``; the replay runs ``metaharness replay KIND``
in-process with stdout to ``/dev/null``. Reported: peak RSS of
each at both sizes and the 400k/50k ratio (flat: near 1), and the replay's time over the decode's, median
and p90 of REPEATS interleaved runs, and per line (the 400k−50k difference of each, which leaves out the
verb's start-up: its imports and the opening), on the wall clock and again on each process's CPU time (on a
shared machine the wall clock also counts the time a process waited for a core). Aims: the 400k/50k memory ratio ≤ 1.2; replay ≤ 3× the decode.

Run: ``.venv/bin/python benchmarks/bench_replay.py [REPEATS] [KIND...]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

VECTORS = Path(__file__).resolve().parent.parent / "vectors"
RECORDS = {
    "b10x": (VECTORS / "b10x" / "golden" / "loop.jsonl", 1, (b"call_b10x_001",)),
    "codex": (
        VECTORS / "codex" / "record" / "shell.jsonl",
        13,
        (b"call_b10x_001", b"fc_b10x_001", b"exec-3df565c9-38c2-4104-95b4-7bd82b10c931", b"msg_b10x_006",
         b"resp_b10x_005", b"resp_b10x_006"),
    ),
    "claude": (VECTORS / "claude" / "record" / "bash.jsonl", 1, (b"toolu_b10x_001", b"msg_b10x_001", b"msg_b10x_002")),
    "gemini": (VECTORS / "gemini" / "record" / "shell.jsonl", 2, (b"run_shell_command__call_b10x_001",)),
}
"""Each kind's vector, how many opening lines it keeps before the repeated middle, and the ids made fresh."""
REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
KINDS = tuple(sys.argv[2:]) or ("b10x", "codex")
SIZES = (50_000, 400_000)

DECODE = """
import msgspec, resource, sys, time
started, cpu = time.perf_counter(), time.process_time()
with open(sys.argv[1], "rb") as handle:
    for line in handle:
        msgspec.json.decode(line)
print(time.perf_counter() - started, time.process_time() - cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

REPLAY = """
import os, resource, sys, time
sys.stdout = open(os.devnull, "w")
from metaharness.shell.cli import cli
started, cpu = time.perf_counter(), time.process_time()
try:
    cli.main(["replay", sys.argv[2], sys.argv[1]], standalone_mode=False)
except SystemExit:
    pass
sys.stderr.write(f"{time.perf_counter() - started} {time.process_time() - cpu} "
                 f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n")
"""


def record(kind: str, lines: int, path: Path) -> None:
    """A ``kind`` record of about ``lines`` lines: the vector's opening, its middle repeated with fresh ids, its end."""
    vector, head, ids = RECORDS[kind]
    golden = vector.read_bytes().splitlines()
    opening, middle, closing = golden[:head], golden[head:-1], golden[-1]
    with path.open("wb") as out:
        out.write(b"".join(line + b"\n" for line in opening))
        written = head + 1
        cycle = 0
        while written + len(middle) <= lines:
            cycle += 1
            for line in middle:
                for fresh in ids:
                    line = line.replace(fresh, fresh + f"_{cycle:07d}".encode())
                out.write(line + b"\n")
            written += len(middle)
        out.write(closing + b"\n")


def cached_bytecode(scratch: str) -> dict[str, str]:
    """The children's environment: bytecode cached under ``scratch``, as an installed wheel has it, so the replay's
    start-up is its imports and not the compiling of every module (``PYTHONDONTWRITEBYTECODE`` dropped)."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return environment | {"PYTHONPYCACHEPREFIX": str(Path(scratch, "bytecode"))}


def measure(script: str, env: dict[str, str], *args: str) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in KiB) of ``script`` run on ``args`` in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True, env=env)
    seconds, cpu, rss = (done.stdout or done.stderr).split()
    return float(seconds), float(cpu), int(rss)


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def ratios(kind: str, results: dict[str, list[tuple[float, float, int]]], clock: int, label: str) -> dict[str, float]:
    """The replay's time over the decode's on ``clock`` (0 wall, 1 CPU): median and p90 at each size, per line."""
    median = {name: statistics.median(run[clock] for run in runs) for name, runs in results.items()}
    summary: dict[str, float] = {}
    for size in SIZES:
        each = [r[clock] / d[clock] for r, d in zip(results[f"replay {size}"], results[f"decode {size}"], strict=True)]
        ratio = median[f"replay {size}"] / median[f"decode {size}"]
        print(f"{kind:>6} replay/decode {label} at {size // 1000}k lines: {ratio:.2f}× median, "
              f"{p90(each):.2f}× p90 (aim ≤ 3)")  # fmt: skip
        summary[f"{label}_ratio_{size // 1000}k"] = round(ratio, 2)
    small, large = SIZES
    marginal = (median[f"replay {large}"] - median[f"replay {small}"]) / (
        median[f"decode {large}"] - median[f"decode {small}"]
    )
    print(f"{kind:>6} replay/decode {label} per line ({large // 1000}k − {small // 1000}k, start-up left out): "
          f"{marginal:.2f}×")  # fmt: skip
    summary[f"{label}_ratio_per_line"] = round(marginal, 2)
    return summary


def main() -> None:
    summary: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        env = cached_bytecode(scratch)
        for kind in KINDS:
            paths = {size: Path(scratch, f"{kind}-{size}.jsonl") for size in SIZES}
            for size, path in paths.items():
                record(kind, size, path)
            measure(REPLAY, env, str(paths[SIZES[0]]), kind)  # fills the bytecode cache; not counted
            results: dict[str, list[tuple[float, float, int]]] = {}
            for _ in range(REPEATS):
                for size, path in paths.items():
                    results.setdefault(f"decode {size}", []).append(measure(DECODE, env, str(path)))
                    results.setdefault(f"replay {size}", []).append(measure(REPLAY, env, str(path), kind))
            for name, runs in results.items():
                wall, cpu, rss = (statistics.median(run[i] for run in runs) for i in range(3))
                print(f"{kind:>6} {name:>15}: {wall * 1000:8.0f} ms wall, {cpu * 1000:8.0f} ms CPU, "
                      f"peak RSS {rss / 1024:6.1f} MiB")  # fmt: skip
            small, large = SIZES
            rss_of = {size: statistics.median(run[2] for run in results[f"replay {size}"]) for size in SIZES}
            growth = rss_of[large] / rss_of[small]
            print(f"{kind:>6} replay peak RSS {large // 1000}k/{small // 1000}k: {growth:.2f} (aim ≤ 1.2)")
            summary[kind] = {"rss_growth": round(growth, 2)}
            summary[kind] |= ratios(kind, results, 0, "time")
            summary[kind] |= ratios(kind, results, 1, "cpu")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
