"""Fixtures shared by the test modules; plain helpers live in their own modules beside this one
(``codex_process``, ``emulator_process``, ``loop_process``, ``governed_b10x``, ``project_verb``, ``shared_tree``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from vendor_cli import home_linking_the_clis


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A loop workspace ``tmp_path/ws`` holding one README.md."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("hello harness\n")
    return root


@pytest.fixture
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``HOME``, for the test and every process it starts, is ``tmp_path/own-home`` linking the pinned
    vendor CLIs: tests run in parallel and none writes the caller's HOME."""
    home = home_linking_the_clis(tmp_path / "own-home")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def emulator(request: pytest.FixtureRequest) -> Iterator[str]:
    """``b10x-emulator`` serving the scenario the test names (indirect parameter), recording to
    ``tmp_path/emulator.jsonl``; yields the gateway root (the base URL without ``/v1``)."""
    scenario = request.param
    program = Path(sys.executable).with_name("b10x-emulator")
    record = request.getfixturevalue("tmp_path") / "emulator.jsonl"
    process = subprocess.Popen(
        [str(program), "--scenario", scenario, "--record", str(record)], stdout=subprocess.PIPE, text=True
    )
    announcement = json.loads(process.stdout.readline())
    root = announcement["base_url"].removesuffix("/v1")
    yield root
    process.terminate()
    process.wait(timeout=60)
