"""Lifecycle soak (issue 16): 100 ``metaharness run`` processes, each signalled (SIGTERM or SIGINT) at a
random moment from its first millisecond to past its wind-up, against stand-in harnesses (b10x and
claude) that leave grandchildren holding their stdout, one in the child's group and one that called
``setsid``. Every run must end with ``stream.closed`` as its last line or, signalled before the spawn,
with the ``signalled`` refusal and nothing on stdout; no process of the run may be left and no scratch
directory. A signal in the interpreter's own start-up (before the entry point's first line, ~30-60 ms)
ends Python itself, by SIGTERM or as a KeyboardInterrupt, with nothing started; it is counted apart.
Prints the counts, and the mean wall time of a signalled run against an unsignalled one
measured in the same session (a ratio, not a timed test).

Run: ``.venv/bin/python benchmarks/bench_lifecycle_soak.py [RUNS]``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

METAHARNESS = str(Path(sys.executable).with_name("metaharness"))
VERSIONS = {"b10x-harness": "b10x-harness 0.22.0", "claude": "2.1.332 (Claude Code)"}
CLAUDE_RECORD = (Path(__file__).parent.parent / "vectors" / "claude" / "record" / "bash.jsonl").read_bytes().splitlines()
B10X_RECORD = [
    b'{"kind":"started","model":"m","workspace":"."}',
    b'{"kind":"turn-started","turn":1}',
    b'{"kind":"text-delta","text":"working"}',
    b'{"kind":"finished","stop":"end_turn","turns":1}',
]
HARNESS = """
import os, subprocess, sys, time
if '--version' in sys.argv:
    print({version!r})
    sys.exit(0)
pids = [os.getpid()]
for detach in (False, True):
    pids.append(subprocess.Popen(["sleep", "300"], start_new_session=detach).pid)
with open("pids", "w") as handle:
    handle.write(" ".join(map(str, pids)))
out = sys.stdout.buffer
for line in {lines!r}:
    out.write(line + b"\\n")
    out.flush()
    time.sleep(0.15)
"""


def stand_in(home: Path, name: str, lines: list[bytes]) -> None:
    program = home / ".local" / "bin" / name
    program.parent.mkdir(parents=True, exist_ok=True)
    program.write_text(f"#!{sys.executable}\n" + HARNESS.format(version=VERSIONS[name], lines=lines))
    program.chmod(0o755)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def one_run(root: Path, kind: str, delay: float | None, number: signal.Signals) -> tuple[str, int, int, float]:
    """One run; returns how it ended, the processes and scratch directories left, and its wall time."""
    home, work, scratch = root / "home", root / "ws", root / "tmp"
    for directory in (home, work, scratch):
        directory.mkdir(parents=True)
    name, record = ("b10x-harness", B10X_RECORD) if kind == "b10x" else ("claude", CLAUDE_RECORD)
    stand_in(home, name, record)
    args = ["run", kind, "-p", "hi", "--model-endpoint", "http://127.0.0.1:9", "--decisions", "observe"]
    args += ["--cwd", str(work), *(["--model", "m"] if kind == "b10x" else ["--credentials", "none"])]
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "TMPDIR": str(scratch)}
    started = time.monotonic()
    process = subprocess.Popen([METAHARNESS, *args], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)  # fmt: skip
    if delay is not None:
        time.sleep(delay)
        process.send_signal(number)
    out, err = process.communicate(timeout=120)
    took = time.monotonic() - started
    time.sleep(0.2)
    pids = [int(pid) for pid in (work / "pids").read_text().split()] if (work / "pids").exists() else []
    left = sum(alive(pid) for pid in pids)
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    lines = out.splitlines()
    if lines and json.loads(lines[-1]).get("event") == "stream.closed":
        ending = "stream.closed"
    elif not lines and err.decode().startswith("metaharness: signalled: "):
        ending = "signalled refusal"
    elif not lines and not pids and (process.returncode == -number or b"KeyboardInterrupt" in err):
        ending = "ended by the interpreter before metaharness's first line ran (nothing started)"
    else:
        ending = f"LOST (exit {process.returncode}, stderr {err.decode()[-200:]!r})"
    return ending, left, len(os.listdir(scratch)), took


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    rng = random.Random(16)
    endings: Counter[str] = Counter()
    left_processes = left_scratch = 0
    signalled_time = 0.0
    with tempfile.TemporaryDirectory() as base:
        baseline = [one_run(Path(base, f"baseline-{k}"), kind, None, signal.SIGTERM)[3] for k, kind in
                    enumerate(("b10x", "claude", "b10x", "claude"))]  # fmt: skip
        for index in range(runs):
            kind = "b10x" if index % 2 == 0 else "claude"
            delay = rng.choice((rng.uniform(0.0, 0.12), rng.uniform(0.0, 2.4)))
            number = rng.choice((signal.SIGTERM, signal.SIGINT))
            ending, left, scratch, took = one_run(Path(base, f"run-{index}"), kind, delay, number)
            endings[ending] += 1
            left_processes += left
            left_scratch += scratch
            signalled_time += took
    unsignalled = sum(baseline) / len(baseline)
    print(f"runs signalled: {runs}")
    for ending, count in sorted(endings.items()):
        print(f"  {ending}: {count}")
    print(f"processes left: {left_processes}")
    print(f"scratch directories left: {left_scratch}")
    print(f"mean wall time, signalled / unsignalled: {signalled_time / runs:.3f} s / {unsignalled:.3f} s "
          f"= {signalled_time / runs / unsignalled:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
