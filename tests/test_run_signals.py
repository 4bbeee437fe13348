"""A signal at any point of a run yields docs/cli.md's ending (real processes, stand-in harnesses): in
the first milliseconds (as soon as metaharness catches the signal at all) the ``signalled`` refusal
with nothing started, and after ``session.ended`` while the child lingers a ``killed`` close with the
child gone and the scratch removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from closing_endpoint import CLOSING_ENDPOINT
from stand_in import live_processes_naming, records_body, stand_in

METAHARNESS = str(Path(sys.executable).with_name("metaharness"))
B10X_RECORD = [
    b'{"kind":"started","model":"m","workspace":"."}',
    b'{"kind":"turn-started","turn":1}',
    b'{"kind":"finished","stop":"end_turn","turns":1}',
]


def catches(pid: int, number: int) -> bool:
    """Whether process ``pid`` has a handler installed for signal ``number`` (``SigCgt``); for SIGTERM,
    which Python leaves alone, that is metaharness's own (SIGINT is the interpreter's from its start)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (number - 1) & 1)


def start(tmp_path: Path, body: str, *options: str) -> tuple[subprocess.Popen[bytes], Path]:
    work, scratch = tmp_path / "ws", tmp_path / "tmp"
    work.mkdir()
    scratch.mkdir()
    stand_in(tmp_path, "b10x-harness", body)
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "TMPDIR": str(scratch)}
    argv = [METAHARNESS, "run", "b10x", "-p", "hi", "--model", "m", "--model-endpoint", CLOSING_ENDPOINT]
    argv += ["--decisions", "observe", "--cwd", str(work), *options]
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE), work


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_in_the_first_milliseconds_is_the_signalled_refusal(tmp_path: Path, number: signal.Signals) -> None:
    process, _ = start(tmp_path, records_body(B10X_RECORD))
    deadline = time.monotonic() + 60
    while not catches(process.pid, signal.SIGTERM) and time.monotonic() < deadline:
        time.sleep(0.001)
    process.send_signal(number)
    out, err = process.communicate(timeout=60)
    if out:
        assert json.loads(out.splitlines()[-1])["event"] == "stream.closed"
    else:
        assert err.decode() == f"metaharness: signalled: {number.name} arrived before the harness was started\n"
        assert process.returncode == 2
    assert b"Traceback" not in err
    assert not os.listdir(tmp_path / "tmp")


@pytest.mark.parametrize(
    ("confine", "ended"),
    [("off", {"kind": "signaled", "signal": 15}), ("on", {"kind": "exited", "code": 128 + 15})],
)
def test_a_signal_after_session_ended_while_the_child_lingers_closes_killed(
    tmp_path: Path, confine: str, ended: dict[str, object]
) -> None:
    """Confined, metaharness's child is the view: its init forwards SIGTERM to the harness and exits
    128+15 when the harness ends by it."""
    lingering = records_body(B10X_RECORD) + "import time\nopen('started', 'w').close()\ntime.sleep(300)\n"
    process, work = start(tmp_path, lingering, "--confine", confine)
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if json.loads(line)["event"] == "session.ended":
            break
    deadline = time.monotonic() + 60
    while not (work / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    closed = json.loads(out.splitlines()[-1])
    assert closed["event"] == "stream.closed" and closed["reason"] == "killed", err
    assert closed["process"] == ended
    assert not live_processes_naming(str(tmp_path / ".local" / "bin" / "b10x-harness"))
    assert not os.listdir(tmp_path / "tmp")


HELD_BEFORE_INPUTS = """
import os, signal, sys
from metaharness.shell.run_signals import hold_signals
hold_signals()
os.kill(os.getpid(), signal.SIGINT)
from metaharness.pure.options import RunOptions
from metaharness.shell.run import execute_run
sys.exit(execute_run(RunOptions(kind=sys.argv[1], prompt="x", frame="/nonexistent", credentials="none", confine="off",
                                model="m", model_endpoint="http://127.0.0.1:9")))
"""


SIGNALLED = "metaharness: signalled: SIGINT arrived before the harness was started\n"
UNREADABLE = "metaharness: frame-unreadable: frame /nonexistent: could not be read: No such file or directory\n"


@pytest.mark.parametrize(("kind", "said"), [("claude", SIGNALLED), ("b10x", SIGNALLED), ("gemini", UNREADABLE),
                                            ("codex", UNREADABLE)])  # fmt: skip
def test_a_signal_held_through_the_inputs_is_refused_where_the_kind_checks_it(kind: str, said: str) -> None:
    """Stages 5–7 run ahead of the kind's run module and its ``EarlySignal``, and a signal held since start-up is
    still checked where each kind checks it: claude and b10x after the view's refusals, before the frame; gemini
    after its declared inputs; codex after its plan."""
    done = subprocess.run([sys.executable, "-c", HELD_BEFORE_INPUTS, kind], capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stderr.decode()) == (2, said)
