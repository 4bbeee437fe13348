"""b10x benchmarks (issue 4), printed as ratios against baselines measured in the same run.

1. Seam mapping of a 1,000,000-line loop record relative to ``msgspec.json.decode`` of those lines
   alone (aim ≥ 0.5×), in observe mode and in frame mode (every call asked, decided by the frame and
   answered); the seam's cost per line on that record against a record 10× shorter (≈ 1.0× when each
   line costs the same however many calls came before); and peak RSS of a 10× longer record against
   the shorter one (aim: + ≤ 20 MB).
2. Decision latency on the caller seam in frame mode, timed on the loop's side from just before the
   ``approval-required`` line is written to the answer line read back (a round trip through both
   pipes, so an upper bound of metaharness's share): aim median ≤ 1 ms, p99 ≤ 5 ms.
3. A governed run (``metaharness run b10x --decisions observe``) relative to the same
   ``b10x-harness`` run invoked directly on the same emulator scenario: aim ≤ 1.10×.
4. ``metaharness capabilities b10x`` start-up relative to ``python -c pass``: reported.

Run: ``.venv/bin/python benchmarks/bench_b10x.py [lines]`` (default 1,000,000).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec

from metaharness.pure.b10x.replay import replay_settings
from metaharness.pure.b10x.seam import open_seam, read_line
from metaharness.pure.events import Hermetic, Transcript
from metaharness.pure.frames import seal_frame
from metaharness.shell.b10x.live import drive_loop
from metaharness.shell.live_engine import StreamLines

BIN = Path(sys.executable).parent
DELTAS_PER_TURN = 50
RUNS = 10


def record_lines(count: int, asked: bool = False) -> Iterator[bytes]:
    """A loop record shaped like a long run: turns of text deltas, usage, one read each; ``asked`` makes
    each turn's call a write the loop asks about (``approval-required``, then ``approval-resolved``)."""
    produced = 0
    turn = 0
    while True:
        turn += 1
        turn_lines = [b'{"kind":"turn-started","turn":%d}' % turn]
        turn_lines += [b'{"kind":"text-delta","text":"some streamed words "}'] * DELTAS_PER_TURN
        turn_lines.append(
            b'{"kind":"usage","model":"b10x-emulated","input_tokens":42,"output_tokens":8,"cached_input_tokens":7}'
        )
        name = b"file_write" if asked else b"file_read"
        turn_lines.append(
            b'{"kind":"tool-requested","call_id":"call_%d","name":"%s","arguments":{"path":"README.md"}}' % (turn, name)
        )
        if asked:
            turn_lines.append(b'{"kind":"approval-required","call_id":"call_%d","name":"file_write"}' % turn)
            turn_lines.append(b'{"kind":"approval-resolved","call_id":"call_%d","approved":true}' % turn)
        turn_lines.append(b'{"kind":"tool-completed","call_id":"call_%d","failed":false}' % turn)
        for line in turn_lines:
            if produced == count:
                return
            produced += 1
            yield line


def decode_seconds(count: int, asked: bool = False) -> float:
    """CPU seconds (process time, steady on a shared machine) to decode the record's lines alone."""
    decode = msgspec.json.decode
    begin = time.process_time()
    for line in record_lines(count, asked):
        decode(line)
    return time.process_time() - begin


READS = [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]
FRAME = seal_frame(
    {
        "workflow": {"id": "w", "version": "1"},
        "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [], "obligations": [], "reaching": [], "next": [], "handoff": {"handoff": "none"},
        "operations": [*READS, {"op": "file.write"}],
    }
).unwrap()


def seam_seconds(count: int, asked: bool = False) -> float:
    """CPU seconds to map ``count`` record lines; ``asked`` maps the asked record in frame mode."""
    settings = replay_settings(
        transcript_path="loop.jsonl", model="b10x-emulated", decisions="frame" if asked else "observe",
        frame=FRAME if asked else None,
    )
    state, _ = open_seam(settings)
    begin = time.process_time()
    for number, line in enumerate(record_lines(count, asked), start=1):
        state, _ = read_line(state, number, line)
    return time.process_time() - begin


def peak_rss_mb(count: int) -> float:
    """Peak RSS of a fresh process that maps ``count`` lines through the seam."""
    program = (
        "import resource, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import bench_b10x\n"
        f"bench_b10x.seam_seconds({count})\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    return int(done.stdout.strip()) / 1024


CALLER_CHILD = """
import sys, time
out = sys.stdout.buffer
timings = []
for n in range(int(sys.argv[1])):
    call = "call_%d" % n
    out.write(b'{"kind":"tool-requested","call_id":"%s","name":"file_write","arguments":{"path":"note.md","text":"x"}}\\n' % call.encode())
    out.flush()
    begin = time.perf_counter()
    out.write(b'{"kind":"approval-required","call_id":"%s","name":"file_write"}\\n' % call.encode())
    out.flush()
    sys.stdin.buffer.readline()
    timings.append(time.perf_counter() - begin)
    out.write(b'{"kind":"approval-resolved","call_id":"%s","approved":true}\\n' % call.encode())
    out.write(b'{"kind":"tool-completed","call_id":"%s","failed":false}\\n' % call.encode())
    out.flush()
out.write(b'{"kind":"finished","stop":{"kind":"completed"},"turns":1}\\n')
out.flush()
with open(sys.argv[2], "w") as handle:
    handle.write(" ".join(repr(t) for t in timings))
"""


def caller_seam_latencies(calls: int) -> list[float]:
    settings = replay_settings(run="bench", decisions="frame", frame=FRAME, transcript_path="loop.jsonl")
    settings = msgspec.structs.replace(
        settings,
        transcript=Transcript(path="loop.jsonl", digest=None, bytes=None),
        hermetic=Hermetic(
            mode="off", decisions="frame", imposed=(), declared=(), unavailable=(), ambient_inputs=(), installed_plugins=()
        ),
    )
    with tempfile.TemporaryDirectory() as scratch:
        timings_file = os.path.join(scratch, "timings")
        drive_loop(
            argv=[sys.executable, "-c", CALLER_CHILD, str(calls), timings_file],
            env={"PATH": os.environ.get("PATH", "")},
            cwd=scratch,
            settings=settings,
            opening=lambda s: (s, ()),
            write_event=StreamLines(settings.run).write,
            transcript=None,
            commands=None,
            on_steering_refusal=lambda _line: None,
        )
        with open(timings_file) as handle:
            return [float(value) for value in handle.read().split()]


def median_seconds(argv: list[str], env: dict[str, str] | None = None) -> float:
    timings = []
    for _ in range(RUNS):
        begin = time.perf_counter()
        subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
        timings.append(time.perf_counter() - begin)
    return statistics.median(timings)


def governed_against_direct() -> tuple[float, float]:
    emulator = subprocess.Popen([str(BIN / "b10x-emulator"), "--scenario", "flat-tool"], stdout=subprocess.PIPE)
    assert emulator.stdout is not None
    base_url = json.loads(emulator.stdout.readline())["base_url"]
    try:
        with tempfile.TemporaryDirectory() as root:
            home = Path(root) / "home"
            (home / ".local" / "bin").mkdir(parents=True)
            (home / ".local" / "bin" / "b10x-harness").symlink_to(BIN / "b10x-harness")
            work = Path(root) / "work"
            work.mkdir()
            (work / "README.md").write_text("hello harness\n")
            direct = median_seconds(
                [
                    str(BIN / "b10x-harness"), "run", "--execution-path", "metaharness", "--json", "--approve-up-to",
                    "high", "--no-session", "--workspace", str(work), "--base-url", base_url, "--model",
                    "b10x-emulated", "--input", "read the readme",
                ],
                env={"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": root},
            )
            governed = median_seconds(
                [
                    str(BIN / "metaharness"), "run", "b10x", "--decisions", "observe", "-p", "read the readme",
                    "--model", "b10x-emulated", "--model-endpoint", base_url, "--cwd", str(work),
                ],
                env={"HOME": str(home), "PATH": os.environ.get("PATH", "")},
            )
    finally:
        emulator.terminate()
        emulator.wait()
    return governed, direct


def main() -> None:
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    decode = decode_seconds(lines)
    seam = seam_seconds(lines)
    print(
        f"seam mapping, observe, {lines} lines: decode {decode:.2f}s, seam {seam:.2f}s "
        f"({seam / lines * 1e6:.2f} µs/line) — throughput ratio {decode / seam:.3f}x (aim >= 0.5x)"
    )
    asked_decode, asked_seam = decode_seconds(lines, asked=True), seam_seconds(lines, asked=True)
    print(
        f"seam mapping, frame, every call asked, {lines} lines: decode {asked_decode:.2f}s, seam {asked_seam:.2f}s "
        f"({asked_seam / lines * 1e6:.2f} µs/line) — throughput ratio {asked_decode / asked_seam:.3f}x (aim >= 0.5x)"
    )
    shorter = seam_seconds(lines // 10, asked=True) / (lines // 10)
    print(
        f"seam cost per line, frame: {lines} lines against {lines // 10} lines — "
        f"{asked_seam / lines / shorter:.2f}x (1.0x: a line costs the same however many calls came before)"
    )
    short, long = peak_rss_mb(lines // 10), peak_rss_mb(lines)
    print(f"peak RSS: {lines // 10} lines {short:.1f} MB, {lines} lines {long:.1f} MB — +{long - short:.1f} MB (aim <= 20 MB)")
    latencies = sorted(caller_seam_latencies(500))
    median = statistics.median(latencies) * 1000
    p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000
    print(f"caller-seam decision round trip, frame mode, 500 calls: median {median:.3f} ms, p99 {p99:.3f} ms (aim <= 1 / 5 ms)")
    governed, direct = governed_against_direct()
    print(f"governed run {governed:.3f}s vs direct loop {direct:.3f}s — {governed / direct:.2f}x (aim <= 1.10x)")
    capabilities = median_seconds([str(BIN / "metaharness"), "capabilities", "b10x"])
    bare = median_seconds([sys.executable, "-c", "pass"])
    print(f"capabilities b10x start-up {capabilities:.3f}s vs python -c pass {bare:.3f}s — {capabilities / bare:.2f}x")


if __name__ == "__main__":
    main()
