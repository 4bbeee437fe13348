"""Bounded reading (issue 16), printed as ratios against baselines measured in the same run.

1. The JSON depth check on hostile lines (escaped quotes never closed, nests 128 deep back to back)
   per byte at 16 MiB against 1.6 MiB: aim ≈ 1.0× (linear, so no line can stall a run).
2. Cutting one 32 MiB stdin line fed in 64 KiB chunks (``LineCutter``, bound 4 MiB) against
   ``bytes.find`` over the same chunks: reported; and the bytes it holds at most against the bound.

Run: ``.venv/bin/python benchmarks/bench_bounded_reads.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from metaharness.pure.bounds import COMMAND_LINE_LIMIT, too_deep
from metaharness.shell.bounded_reads import LineCutter

MIB = 1024 * 1024


def seconds(action: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def depth_check_ns_per_byte(line: bytes) -> float:
    return seconds(lambda: too_deep(line)) / len(line) * 1e9


def hostile(size: int, kind: str) -> bytes:
    if kind == "escaped quotes":
        return b"[" * 200 + b'"' + b'\\"' * (size // 2) + b"\\"
    unit = b"[" * 128 + b"]" * 128
    return unit * (size // len(unit))


def main() -> None:
    for kind in ("escaped quotes", "nests 128 deep"):
        small, large = hostile(MIB * 16 // 10, kind), hostile(16 * MIB, kind)
        per_byte_small, per_byte_large = depth_check_ns_per_byte(small), depth_check_ns_per_byte(large)
        print(f"depth check, {kind}: {per_byte_large:.2f} ns/byte at 16 MiB vs {per_byte_small:.2f} at "
              f"1.6 MiB — {per_byte_large / per_byte_small:.2f}x (aim ≈ 1.0x)")  # fmt: skip
    chunk = b"x" * 65536
    chunks = [chunk] * (32 * MIB // len(chunk)) + [b"\n"]
    held = 0

    def cut() -> None:
        nonlocal held
        cutter = LineCutter(COMMAND_LINE_LIMIT)
        for piece in chunks:
            cutter.feed(piece)
            held = max(held, len(cutter.pending))

    baseline = seconds(lambda: [piece.find(b"\n") for piece in chunks])
    cutting = seconds(cut)
    print(f"cutting a 32 MiB stdin line: {cutting * 1e3:.2f} ms vs bytes.find {baseline * 1e3:.2f} ms — {cutting / baseline:.1f}x; "
          f"held at most {held / MIB:.1f} MiB of a {COMMAND_LINE_LIMIT / MIB:.0f} MiB bound")  # fmt: skip


if __name__ == "__main__":
    main()
