"""The everyday tools around a run (docs/cli.md): ``--version`` on the three console scripts."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

VENV_BIN = Path(sys.executable).parent


@pytest.mark.parametrize("program", ["metaharness", "metaharness-view", "metaharness-eval"])
def test_each_console_script_names_its_version(program: str) -> None:
    done = subprocess.run([str(VENV_BIN / program), "--version"], capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.decode() == f"{program} {importlib.metadata.version('metaharness')}\n"
