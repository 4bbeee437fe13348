"""The child's end is its own exit, not its pipes': stand-in harnesses leave grandchildren holding
their stdout and stderr (one in the child's group, one that called ``setsid``), and the run still
closes its stream promptly with no process left behind, unconfined (the run adopts and ends them) and
confined (the view's pid namespace ends with it). A pid the stand-in writes is one of its own pid
namespace, so what is left is found on the host by a word on the processes' command lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from closing_endpoint import CLOSING_ENDPOINT
from governed_b10x import stream
from stand_in import live_processes_naming, records_body, stand_in

CLAUDE_RECORD = (Path(__file__).parent.parent / "vectors" / "claude" / "record" / "bash.jsonl").read_bytes().splitlines()
B10X_RECORD = [b'{"kind":"started","model":"m","workspace":"."}', b'{"kind":"finished","stop":"end_turn","turns":1}']


def leave_grandchildren(marker: str) -> str:
    """A stand-in body starting two grandchildren that hold its pipes and carry ``marker`` on their
    command lines, their pids (as the stand-in sees them) written to ``pids``."""
    return f"""
import subprocess
pids = open("pids", "w")
for detach in (False, True):
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", {marker!r}], start_new_session=detach)
    pids.write(f"{{holder.pid}}\\n")
pids.close()
"""


@pytest.mark.parametrize("confine", ["on", "off"])
@pytest.mark.parametrize("kind", ["b10x", "claude"])
def test_grandchildren_holding_the_pipes_neither_hold_the_run_nor_outlive_it(tmp_path: Path, kind: str, confine: str) -> None:
    name, record = ("b10x-harness", B10X_RECORD) if kind == "b10x" else ("claude", CLAUDE_RECORD)
    marker = f"holder-{uuid.uuid4().hex}"
    stand_in(tmp_path, name, leave_grandchildren(marker) + records_body(record))
    work = tmp_path / "ws"
    work.mkdir()
    pids_file = work / "pids"
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    args = ["-p", "hi", "--model-endpoint", CLOSING_ENDPOINT, "--decisions", "observe", "--cwd", str(work)]
    args += ["--model", "m"] if kind == "b10x" else ["--credentials", "none"]
    args += ["--confine", confine]
    started = time.monotonic()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("metaharness")), "run", kind, *args],
        env=env, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    took = time.monotonic() - started
    events = stream(done)
    assert events[-1]["event"] == "stream.closed" and json.dumps(events[-1]["process"]) == '{"kind": "exited", "code": 0}'
    assert took < 30, f"the run waited {took:.1f} s on its grandchildren's pipes"
    assert len(pids_file.read_text().split()) == 2
    assert not live_processes_naming(marker)
    assert not [entry for entry in os.listdir(tmp_path) if entry.startswith("metaharness-")]


FAILING_RUN = """
import sys
import metaharness.shell.b10x.live as live
real_read_line = live.read_line


def read_line(state, number, line, tree=None):
    if number == 2:
        raise RuntimeError("a fault injected into the seam")
    return real_read_line(state, number, line, tree)


live.read_line = read_line
from metaharness.shell.entry import main
sys.argv = ["metaharness", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("confine", ["on", "off"])
def test_an_unexpected_exception_stops_the_child_closes_the_stream_and_removes_scratch(tmp_path: Path, confine: str) -> None:
    program = stand_in(tmp_path, "b10x-harness", records_body([*B10X_RECORD[:1], b'{"kind":"turn-started","turn":1}'])
                       + "import time\ntime.sleep(300)\n")  # fmt: skip
    work = tmp_path / "ws"
    work.mkdir()
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    args = ["run", "b10x", "-p", "hi", "--model", "m", "--model-endpoint", CLOSING_ENDPOINT, "--cwd", str(work),
            "--confine", confine]  # fmt: skip
    done = subprocess.run([sys.executable, "-c", FAILING_RUN, *args, "--decisions", "observe"], env=env,
                          capture_output=True, timeout=60, check=False)  # fmt: skip
    events = stream(done)
    assert done.returncode == 3
    assert done.stderr.decode() == "metaharness: internal-error: RuntimeError: a fault injected into the seam\n"
    assert events[-1]["reason"] == "error" and events[-1]["process"] == {"kind": "unknown"}
    assert not live_processes_naming(str(program))
    assert not [entry for entry in os.listdir(tmp_path) if entry.startswith("metaharness-")]
