"""Two-layer benchmarks (issues 21 and 25), printed as ratios against baselines measured in the same run,
interleaved, median and p90.

1. Start-up with the tools' layer: planning a confined claude view with its tools' layer (and writing
   the layer's entry) relative to the same view planned without one (aim: ≤ +10 ms median).
2. A tool started through the tools' layer: a view whose harness runs one command through the
   layer's entry relative to the same view running it directly with ``/bin/bash -c`` (what one shell
   call pays for its own PID, mount and network namespace).
3. A confined codex run with no call (the emulator's ``text`` scenario) relative to the same run
   ``--confine off``: the view's resolver answers at once, so codex waits out no lookup (aim ≤ 1.5×).
4. A confined codex run with one shell call (``codex-shell-steps``), which starts in the tools' layer
   through the entry standing in for ``bwrap``, relative to the same run ``--confine off`` (codex's own
   sandbox only).

Run: ``.venv/bin/python benchmarks/bench_two_layers.py [runs]`` (default 15).
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
from collections.abc import Callable
from pathlib import Path

from metaharness.pure.kind import Kind
from metaharness.shell.confinement import ConfinedSpawn, Prepared, confine, substrate

BIN = Path(sys.executable).parent


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return f"median {statistics.median(samples) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms"


def compare(label: str, runs: int, measured: Callable[[], float], baseline: Callable[[], float]) -> None:
    ours: list[float] = []
    base: list[float] = []
    for _ in range(runs):
        ours.append(measured())
        base.append(baseline())
    on, off = statistics.median(ours), statistics.median(base)
    print(f"{label}: {summary(ours)}; baseline {summary(base)}; {on / off:.3f}x, {(on - off) * 1000:+.1f} ms median")


def prepared(kind: Kind) -> Prepared:
    found = substrate().unwrap()
    return Prepared(kind=kind, bwrap=found[0], bwrap_version=found[1], route=None, reads=(), home=None, hidden=())


def planned(kind: Kind, command: list[str]) -> tuple[float, ConfinedSpawn, str]:
    """Plan one view of ``kind`` in a fresh scratch root; the time it took, the spawn, the root."""
    scratch = tempfile.mkdtemp(prefix="bench-layers-")
    for name in ("work", "tmp"):
        os.mkdir(os.path.join(scratch, name))
    begin = time.perf_counter()
    spawn = confine(prepared(kind), program=sys.executable, command=command, child_path="/usr/bin:/bin",
                    scratch=scratch, cwd=os.path.join(scratch, "work"),
                    writable=(os.path.join(scratch, "work"), os.path.join(scratch, "tmp")), governing=()).unwrap()  # fmt: skip
    return time.perf_counter() - begin, spawn, scratch


def planning(kind: Kind) -> Callable[[], float]:
    def once() -> float:
        elapsed, _, scratch = planned(kind, ["/bin/true"])
        shutil.rmtree(scratch, ignore_errors=True)
        return elapsed

    return once


def one_tool(through_layer: bool) -> Callable[[], float]:
    def once() -> float:
        entry_line = ["/bin/sh", "-c", '"$TOOLS" true']
        _, spawn, scratch = planned("claude", entry_line if through_layer else ["/bin/bash", "-c", "true"])
        env = {"PATH": "/usr/bin:/bin", "TOOLS": os.path.join(scratch, "layer", "tools")}
        begin = time.perf_counter()
        view = subprocess.Popen(spawn.argv, env=env, pass_fds=spawn.pass_fds, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        spawn.spawned()
        _, err = view.communicate()
        elapsed = time.perf_counter() - begin
        shutil.rmtree(scratch, ignore_errors=True)
        assert view.returncode == 0, err.decode()
        return elapsed

    return once


def codex_run(home: Path, root: str, confined: bool, prompt: str = "hello") -> Callable[[], float]:
    argv = [str(BIN / "metaharness"), "run", "codex", "--credentials", "none", "--model-endpoint", root,
            "--decisions", "observe", "-p", prompt, *(() if confined else ("--confine", "off"))]  # fmt: skip

    def once() -> float:
        begin = time.perf_counter()
        done = subprocess.run(argv, env={"HOME": str(home), "PATH": os.environ["PATH"]}, capture_output=True,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
        elapsed = time.perf_counter() - begin
        assert done.returncode == 0, done.stderr.decode()
        return elapsed

    return once


def codex_start_up(runs: int, scenario: str = "text") -> None:
    codex = shutil.which("codex", path=f"{Path.home()}/.local/bin:{os.environ['PATH']}")
    label, prompt = ("3. codex run, no call", "hello") if scenario == "text" else (
        "4. codex run, one shell call", "do the steps\n$ echo hi\n")  # fmt: skip
    if codex is None:
        print(f"{label}: skipped, no codex on the PATH")
        return
    process = subprocess.Popen([str(BIN / "b10x-emulator"), "--scenario", scenario], stdout=subprocess.PIPE)
    assert process.stdout is not None
    root = json.loads(process.stdout.readline())["base_url"].removesuffix("/v1")
    with tempfile.TemporaryDirectory() as directory:
        home = Path(directory) / "home"
        (home / ".local" / "bin").mkdir(parents=True)
        (home / ".local" / "bin" / "codex").symlink_to(codex)
        try:
            compare(f"{label}: confined vs --confine off", runs, codex_run(home, root, True, prompt),
                    codex_run(home, root, False, prompt))  # fmt: skip
        finally:
            process.terminate()
            process.wait()


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    substrate().unwrap()
    compare("1. start-up: the view planned with the tools' layer vs without", runs * 4, planning("claude"),
            planning("b10x"))  # fmt: skip
    compare("2. one command through the tools' layer vs directly in the view", runs, one_tool(True), one_tool(False))
    codex_start_up(runs)
    codex_start_up(runs, "codex-shell-steps")


if __name__ == "__main__":
    main()
