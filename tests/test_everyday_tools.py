"""The everyday tools around a run: ``--version`` on the console scripts (docs/cli.md) and ``metaharness-frame``
(docs/frames.md#5-the-metaharness-frame-tool), each as a real process."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

VENV_BIN = Path(sys.executable).parent


@pytest.mark.parametrize("program", ["metaharness", "metaharness-view", "metaharness-eval", "metaharness-frame"])
def test_each_console_script_names_its_version(program: str) -> None:
    done = subprocess.run([str(VENV_BIN / program), "--version"], capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.decode() == f"{program} {importlib.metadata.version('metaharness')}\n"


FRAME_TOOL = str(VENV_BIN / "metaharness-frame")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "step.frame.json"


def frame_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([FRAME_TOOL, *args], capture_output=True, text=True, timeout=60, check=False)


def test_seal_then_check_then_explain_the_example_frame(tmp_path: Path) -> None:
    """The example frame's body sealed again has the example's digest; check says ok; explain lists the rules."""
    example = json.loads(EXAMPLE.read_text())
    unsealed = tmp_path / "step.json"
    unsealed.write_text(json.dumps({key: value for key, value in example.items() if key != "digest"}, indent=2))
    sealed = frame_tool("seal", str(unsealed))
    assert sealed.returncode == 0 and sealed.stdout.endswith("}\n")
    assert json.loads(sealed.stdout)["digest"] == example["digest"]
    (tmp_path / "step.frame.json").write_text(sealed.stdout)
    checked = frame_tool("check", str(tmp_path / "step.frame.json"))
    assert (checked.returncode, checked.stdout) == (0, f"frame {tmp_path}/step.frame.json: ok, sealed {example['digest']}\n")
    explained = frame_tool("explain", str(EXAMPLE)).stdout.splitlines()
    assert explained[0] == f"frame {example['digest']}"
    assert explained[2] == "operations: dir.list, file.edit, file.read, file.write, search — a call of any other operation is denied"
    assert explained[4:] == ["  1. file:src/** admits dir.list, file.edit, file.read, file.write, search",
                             "  2. file:** admits dir.list, file.read, search"]


def test_check_names_the_first_problem(tmp_path: Path) -> None:
    """An edited frame, a FIFO, a document that is no object and a bad command: one named line each."""
    edited = json.loads(EXAMPLE.read_text())
    edited["node"] = {"id": "verify"}
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    done = frame_tool("check", str(tmp_path / "edited.json"))
    assert done.returncode == 1
    assert done.stderr.startswith(f"metaharness-frame: frame-invalid: frame {tmp_path}/edited.json: the stated digest ")
    os.mkfifo(tmp_path / "fifo")
    fifo = frame_tool("check", str(tmp_path / "fifo"))
    assert fifo.returncode == 2 and fifo.stderr.startswith("metaharness-frame: frame-unreadable: ")
    (tmp_path / "list.json").write_text("[]")
    listed = frame_tool("seal", str(tmp_path / "list.json"))
    assert listed.returncode == 2 and "the document is JSON but not an object" in listed.stderr
    usage = frame_tool("bogus")
    assert usage.returncode == 2 and usage.stderr.startswith("metaharness-frame: usage: ") and "Traceback" not in usage.stderr
