"""``metaharness`` start-up to a refusal against ``python -c pass``, measured in the same run.

Refusals through the console script, each exit 2:

- ``run b10x --bogus``: a parse error (``usage``), decided by click before any stage;
- ``run b10x -p x --decisions frame``: ``frame-required``, after stages 2–4 (the options checked, the
  audit facts gathered) and before any launch;
- ``run claude -p x --frame /nonexistent --credentials none``: ``frame-unreadable``, stage 6, after the view's
  bwrap trial (stage 5), in ``shell/claude/inputs.py`` ahead of the kind's run module; beside it the same
  with ``--confine off`` (no trial) and b10x's ``cwd-unusable`` (stage 6, ``shell/b10x/inputs.py``);
- ``run claude … --confine off`` with no ``claude`` on PATH: ``program-not-found``, stage 8, the first
  refusal decided inside the kind's run module (which imports its whole launch path first).

Beside them, the spawn: ``run b10x --confine off`` against a ``b10x-emulator`` to the moment its child, the loop,
is executed (stage 9). The child's ``PATH`` (built from ``HOME``) holds a ``bash`` stand-in for ``b10x-harness``
that writes ``$EPOCHREALTIME`` to a file when started with ``run`` and then executes the real loop; the side is
that stamp less the wall clock read just before ``metaharness`` was started (bash's own start-up, about a
millisecond, is inside it). The run goes on to its end against the emulator; no sleep, the stamp is read after it.

Beside them, the floor the CLI cannot go below: a fresh interpreter importing only ``click``, ``msgspec``
and ``returns.result`` (the parser, the struct library every value is, the ``Result`` every stage returns).
Every side runs as a fresh interpreter from this virtual environment, interleaved so a shared machine's load
falls on all alike, with their bytecode cached in a scratch ``PYTHONPYCACHEPREFIX`` (warmed once, as an
installed package has it). Reported: median and p90 of each, in wall time and in CPU time (user and system, the child's and
its reaped children's, which a loaded machine's waits do not inflate), its ratio of medians to ``python -c pass`` and
its difference (aim: a refusal ≤ 50 ms where python alone takes 10 ms, that is ≤ 5×).

Run: ``.venv/bin/python benchmarks/bench_startup.py [REPEATS]`` (default 30).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
SCRIPT = str(Path(sys.executable).with_name("metaharness"))
SIDES: dict[str, tuple[list[str], int, bytes]] = {
    "python -c pass": ([sys.executable, "-c", "pass"], 0, b""),
    "import click, msgspec, returns": ([sys.executable, "-c", "import click, msgspec, returns.result"], 0, b""),
    "run b10x --bogus": ([SCRIPT, "run", "b10x", "--bogus"], 2, b"metaharness: usage: No such option '--bogus'."),
    "frame-required": ([SCRIPT, "run", "b10x", "-p", "x", "--decisions", "frame"], 2, b"metaharness: frame-required:"),
    "frame-unreadable": (
        [SCRIPT, "run", "claude", "-p", "x", "--frame", "/nonexistent", "--credentials", "none"],
        2,
        b"metaharness: frame-unreadable:",
    ),
    "frame-unreadable --confine off": (
        [SCRIPT, "run", "claude", "-p", "x", "--frame", "/nonexistent", "--credentials", "none", "--confine", "off"],
        2,
        b"metaharness: frame-unreadable:",
    ),
    "cwd-unusable (b10x)": (
        [SCRIPT, "run", "b10x", "-p", "x", "--model", "m", "--decisions", "observe", "--model-endpoint",
         "http://127.0.0.1:9", "--confine", "off", "--cwd", "/nonexistent"],
        2,
        b"metaharness: cwd-unusable:",
    ),
    "program-not-found (stage 8)": (
        [SCRIPT, "run", "claude", "-p", "x", "--credentials", "none", "--decisions", "observe", "--confine", "off"],
        2,
        b"metaharness: program-not-found:",
    ),
}
NO_PROGRAMS = frozenset({"program-not-found (stage 8)"})
"""Sides run with ``PATH`` and ``HOME`` an empty scratch directory, so no program is found."""
SPAWN = "run b10x: start -> child exec"
STAND_IN = """#!/bin/bash
[ "$1" = run ] && printf '%s\\n' "$EPOCHREALTIME" >> {stamps}
exec {loop} "$@"
"""
"""The loop's stand-in on the spawn side's child ``PATH``: the moment it is executed with ``run``, then the loop."""


def timed(argv: list[str], env: dict[str, str], code: int, stderr: bytes) -> tuple[float, float]:
    """Wall and CPU seconds (user and system, its own and its reaped children's: the bwrap trial) of one ``argv`` to
    its exit, which must be ``code`` with stderr starting ``stderr``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    begin = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=tempfile.gettempdir(), capture_output=True, check=False)
    seconds = time.perf_counter() - begin
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == code and done.stderr.startswith(stderr), done.stderr
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def spawned(argv: list[str], env: dict[str, str], stamps: Path) -> tuple[float, float]:
    """Wall seconds from just before ``argv`` started to its child's stamp, and the run's CPU seconds (its whole
    run, the loop's included, so not comparable with the refusals')."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    begin = time.time()
    done = subprocess.run(argv, env=env, cwd=tempfile.gettempdir(), capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr
    stamp = float(stamps.read_text().split()[-1])
    return stamp - begin, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def spawn_side(prefix: str, env: dict[str, str], base_url: str) -> tuple[list[str], dict[str, str], Path]:
    """The spawn side's argv, environment (a scratch ``HOME`` whose ``.local/bin`` holds the stand-in) and stamp file."""
    home = Path(prefix, "home")
    (home / ".local" / "bin").mkdir(parents=True)
    (work := Path(prefix, "ws")).mkdir()
    (work / "README.md").write_text("hello harness\n")
    stamps = Path(prefix, "stamps")
    stand_in = home / ".local" / "bin" / "b10x-harness"
    stand_in.write_text(STAND_IN.format(stamps=stamps, loop=Path(sys.executable).with_name("b10x-harness")))
    stand_in.chmod(0o755)
    argv = [SCRIPT, "run", "b10x", "-p", "write the note", "--model", "b10x-emulated", "--model-endpoint", base_url,
            "--cwd", str(work), "--decisions", "observe", "--confine", "off"]  # fmt: skip
    return argv, env | {"HOME": str(home)}, stamps


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def main() -> None:
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in (*SIDES, SPAWN)}
    emulator = subprocess.Popen([Path(sys.executable).with_name("b10x-emulator")], stdout=subprocess.PIPE)
    assert emulator.stdout is not None
    base_url = json.loads(emulator.stdout.readline())["base_url"]
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as prefix:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPYCACHEPREFIX": prefix}
        bare = env | {"PATH": prefix, "HOME": prefix}
        spawn_argv, spawn_env, stamps = spawn_side(prefix, env, base_url)
        for name, (argv, code, stderr) in SIDES.items():
            timed(argv, bare if name in NO_PROGRAMS else env, code, stderr)
        spawned(spawn_argv, spawn_env, stamps)
        for _ in range(REPEATS):
            for name, (argv, code, stderr) in SIDES.items():
                samples[name].append(timed(argv, bare if name in NO_PROGRAMS else env, code, stderr))
            samples[SPAWN].append(spawned(spawn_argv, spawn_env, stamps))
    emulator.terminate()
    emulator.wait()
    print(f"{REPEATS} interleaved runs each, in {Path(sys.executable).parent.parent}; wall, then CPU (steadier on a loaded machine)")
    for index, measure in enumerate(("wall", "cpu")):
        base = statistics.median(sample[index] for sample in samples["python -c pass"]) * 1000
        for name, pairs in samples.items():
            if name == SPAWN and measure == "cpu":
                continue  # the whole run's CPU, the loop's included: no start-up figure
            values = [pair[index] for pair in pairs]
            median, tail = statistics.median(values) * 1000, p90(values) * 1000
            print(f"{measure:4} {name:32} median {median:6.1f} ms, p90 {tail:6.1f} ms; {median / base:5.2f}x python, "
                  f"+{median - base:.1f} ms")  # fmt: skip
    print("aim: a refusal <= 50 ms where python -c pass takes 10 ms (<= 5x); the spawn side is start to the child's exec")


if __name__ == "__main__":
    main()
