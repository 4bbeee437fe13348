"""The loop tools' walk by descriptor (docs/loop.md#confinement), printed as ratios against a baseline measured
in the same run: ``find`` and ``search`` over a tree of 444 folders (three deep) holding 4,000 small files, against
``os.walk`` listing the same tree by name (and, for ``search``, reading each file by name). Interleaved, median
and p90 of 15 rounds; no result bound stops either walk early. ``find`` adds the glob and the reply to the
listing, ``search`` the lines, matches and reply to the reads. Aim: ``find`` ≤ 3×, ``search`` ≤ 2× (the
by-name walk the descriptor walk replaced measured ≈ 2× slower than it on ``find``, ≈ 1.8× on ``search``).

Run: ``.venv/bin/python benchmarks/bench_tools_walk.py``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from metaharness.shell.loop.cancel import CancelToken
from metaharness.shell.loop.tools import Workspace

ROUNDS = 15


def tree(root: Path) -> None:
    for a in range(4):
        for b in range(10):
            for c in range(10):
                folder = root / f"a{a}" / f"b{b}" / f"c{c}"
                folder.mkdir(parents=True)
                for index in range(10):
                    (folder / f"f{index}.txt").write_text(f"line {index}\nneedle {a}{b}{c}\n")


def listed_by_name(root: str) -> int:
    count = 0
    for _, directories, names in os.walk(root):
        directories.sort()
        count += len(directories) + len(sorted(names))
    return count


def read_by_name(root: str) -> int:
    hits = 0
    for base, directories, names in os.walk(root):
        directories.sort()
        for name in sorted(names):
            with open(os.path.join(base, name), "rb") as handle:
                hits += handle.read().count(b"needle")
    return hits


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def report(label: str, pairs: list[tuple[float, float]], aim: float) -> None:
    ratios = sorted(measured / baseline for baseline, measured in pairs)
    p90 = ratios[int(len(ratios) * 0.9) - 1]
    baseline_ms = statistics.median(baseline for baseline, _ in pairs) * 1e3
    measured_ms = statistics.median(measured for _, measured in pairs) * 1e3
    print(f"{label}: {measured_ms:.1f} ms vs os.walk {baseline_ms:.1f} ms — median {statistics.median(ratios):.2f}x, "
          f"p90 {p90:.2f}x (aim ≤ {aim:g}x)")  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary).resolve()
        tree(root)
        workspace = Workspace(str(root), (), CancelToken(None, time.monotonic()))
        find = {"glob": "*.txt", "max_results": 100_000}
        search = {"pattern": "needle", "max_results": 100_000}
        finds: list[tuple[float, float]] = []
        searches: list[tuple[float, float]] = []
        for _ in range(ROUNDS):
            finds.append((timed(lambda: listed_by_name(str(root))), timed(lambda: workspace.find(".", ".", find))))
            searches.append((timed(lambda: read_by_name(str(root))), timed(lambda: workspace.search(".", ".", search))))
        report("find over 4,444 entries", finds, 3)
        report("search over 4,000 files", searches, 2)


if __name__ == "__main__":
    main()
