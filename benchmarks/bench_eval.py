"""``metaharness-eval`` benchmarks, printed as ratios against baselines measured in the same run.

1. 20 b10x runs against the emulator (one task, ``repeat: 20``): ``--jobs 2`` throughput relative to
   ``--jobs 1`` (aim ≥ 1.7× on two cores).
2. The same batch on a local Ray cluster (started here on loopback, stopped after) relative to the
   local executor, both ``--jobs 2``: wall time (aim ≤ 1.25×), measured on the second batch the
   cluster runs; the first, which also starts the cluster's workers, is printed beside it.
3. The driver's own peak RSS (the driver in-process, its runs' processes excluded) for 40 runs
   against 5 runs (aim: flat, + ≤ 10 MB).

Each side of a ratio is measured ROUNDS times, the two sides in turn so a shared machine's load falls on
both alike; printed are the median and p90 of each and the ratio of the medians. Beside the first ratio,
each side's CPU seconds (and per run), the cores it kept busy and the load average: on a loaded machine
``--jobs 2`` gets fewer than two, and that, not the runs, is then what holds its ratio down.
Run: ``.venv/bin/python benchmarks/bench_eval.py [runs] [rounds]`` (defaults 20 and 5).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from metaharness.pure.frames import frame_document, seal_frame

BIN = Path(sys.executable).parent
FRAME = {
    "workflow": {"id": "w", "version": "1"}, "node": {"id": "n"},
    "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
    "prior": [], "obligations": [], "reaching": [], "next": [], "handoff": {"handoff": "none"},
    "operations": [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}, {"op": "file.write"}],
}
DRIVER_RSS = """
import resource, sys
from metaharness.shell.eval.command import run_eval_cli
code = run_eval_cli(sys.argv[1:])
sys.stdout.write("%d %d\\n" % (code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""


def world(root: Path, base_url: str) -> dict[str, str]:
    """A git workspace, a HOME linking the loop, a frame and plans of 5, 20 and 40 runs in ``root``;
    returns the environment the command runs with."""
    repository = root / "repo"
    repository.mkdir()
    (repository / "README.md").write_text("hello harness\n")
    for words in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@localhost", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(repository), *words], check=True, capture_output=True)
    (root / "home" / ".local" / "bin").mkdir(parents=True)
    (root / "home" / ".local" / "bin" / "b10x-harness").symlink_to(BIN / "b10x-harness")
    (root / "frame.json").write_bytes(frame_document(seal_frame(FRAME).unwrap()))
    arm = {"kind": "b10x", "model": "b10x-emulated", "model-endpoint": base_url, "frame": "frame.json"}
    task = {"id": "write-note", "prompt": "Write note.md", "workspace": {"git": "repo", "ref": "HEAD"},
            "checks": [{"id": "note", "file": {"path": "note.md", "contains": "harness"}}]}
    for runs in (5, 20, 40):
        plan = {"format": "metaharness.eval/1", "arms": {"b10x": arm}, "tasks": [task], "repeat": runs}
        (root / f"plan-{runs}.yaml").write_text(yaml.safe_dump(plan))
    (root / "tmp").mkdir()
    return {"HOME": str(root / "home"), "PATH": os.environ["PATH"], "TMPDIR": str(root / "tmp")}


def timed(root: Path, env: dict[str, str], plan: str, *args: str) -> float:
    """Wall seconds of one ``metaharness-eval`` into a fresh out directory; every check must pass. The CPU
    seconds it took (the driver and every run's processes, all reaped below this one) go to ``CPU``."""
    out = root / "out"
    shutil.rmtree(out, ignore_errors=True)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    begin = time.perf_counter()
    done = subprocess.run([str(BIN / "metaharness-eval"), plan, "--out", str(out), *args], cwd=root, env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - begin
    assert done.returncode == 0, done.stderr
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(args, []).append(now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime)
    return seconds


CPU: dict[tuple[str, ...], list[float]] = {}
"""CPU seconds of each timed batch by its options (a Ray batch's runs ran in the cluster's workers: not counted)."""


def busy(times: list[float], options: tuple[str, ...], runs: int) -> str:
    """The batches' median CPU seconds (and per run) and the cores they kept busy (median CPU over median wall):
    what the shared machine gave them, which bounds the ratio a second job can reach."""
    cpu = statistics.median(CPU[options])
    return f"{cpu:.1f} CPU s ({cpu / runs * 1000:.0f} ms a run) on {cpu / statistics.median(times):.2f} cores"


def paired(first: Callable[[], float], second: Callable[[], float], rounds: int) -> tuple[list[float], list[float]]:
    """``rounds`` wall times of each, the two measured in turn so a shared machine's load falls on both alike."""
    times = [(first(), second()) for _ in range(rounds)]
    return [pair[0] for pair in times], [pair[1] for pair in times]


def spread(times: list[float]) -> str:
    """``median X s (p90 Y s)`` of ``times``."""
    p90 = statistics.quantiles(times, n=10)[-1] if len(times) > 1 else times[0]
    return f"median {statistics.median(times):.1f} s (p90 {p90:.1f} s)"


def driver_rss_mb(root: Path, env: dict[str, str], plan: str) -> float:
    out = root / "out"
    shutil.rmtree(out, ignore_errors=True)
    done = subprocess.run([sys.executable, "-c", DRIVER_RSS, plan, "--out", str(out), "--jobs", "2"], cwd=root,
                          env=env, capture_output=True, text=True, check=True)
    code, rss = done.stdout.split()[-2:]
    assert code == "0", done.stderr
    return int(rss) / 1024


def ray_cluster(env: dict[str, str], temp: Path) -> tuple[subprocess.Popen[str], str]:
    """``ray start --head --block`` on loopback with the benchmark's HOME, its files in ``temp``;
    (process, address)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port),
         "--num-cpus", "2", "--include-dashboard=false", "--disable-usage-stats",
         "--temp-dir", str(temp)],
        env={**os.environ, "HOME": env["HOME"]}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "Ray runtime started" in line:
            break
    threading.Thread(target=process.stdout.read, daemon=True).start()
    return process, f"127.0.0.1:{port}"


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    print(f"load average {os.getloadavg()[0]:.2f} before (2 cores)")
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as directory:
        root = Path(directory)
        emulator = subprocess.Popen([str(BIN / "b10x-emulator"), "--scenario", "flat-write"], stdout=subprocess.PIPE)
        assert emulator.stdout is not None
        base_url = json.loads(emulator.stdout.readline())["base_url"]
        try:
            env = world(root, base_url)
            (root / f"plan-{runs}.yaml").write_text((root / "plan-20.yaml").read_text().replace("repeat: 20", f"repeat: {runs}"))
            plan = f"plan-{runs}.yaml"
            one, two = paired(lambda: timed(root, env, plan, "--jobs", "1"), lambda: timed(root, env, plan, "--jobs", "2"), rounds)
            print(f"{runs} b10x runs over {rounds} rounds: --jobs 1 {spread(one)}, --jobs 2 {spread(two)}: throughput "
                  f"{statistics.median(one) / statistics.median(two):.2f}x (aim >= 1.7x); --jobs 1 "
                  f"{busy(one, ('--jobs', '1'), runs)}, --jobs 2 {busy(two, ('--jobs', '2'), runs)}; load average "
                  f"{os.getloadavg()[0]:.2f} after")  # fmt: skip
            cluster, address = ray_cluster(env, root / "ray")
            try:
                cold = timed(root, env, plan, "--jobs", "2", "--ray", address)
                on_ray, local = paired(
                    lambda: timed(root, env, plan, "--jobs", "2", "--ray", address), lambda: timed(root, env, plan, "--jobs", "2"),
                    rounds,
                )
            finally:
                cluster.send_signal(signal.SIGTERM)
                cluster.wait(timeout=120)
            print(
                f"ray {spread(on_ray)} (first batch on the fresh cluster {cold:.1f} s) vs local {spread(local)} (--jobs 2): "
                f"{statistics.median(on_ray) / statistics.median(local):.2f}x wall time (aim <= 1.25x); load average "
                f"{os.getloadavg()[0]:.2f} after"
            )
            few, many = driver_rss_mb(root, env, "plan-5.yaml"), driver_rss_mb(root, env, "plan-40.yaml")
            print(f"driver peak RSS: 5 runs {few:.1f} MB, 40 runs {many:.1f} MB: +{many - few:.1f} MB (aim <= +10 MB)")
        finally:
            emulator.send_signal(signal.SIGTERM)
            emulator.wait(timeout=60)


if __name__ == "__main__":
    main()
