"""Fixtures shared by the test modules; plain helpers live in their own modules beside this one
(``codex_process``, ``loop_process``, ``governed_b10x``, ``project_verb``, ``shared_tree``) and under ``helpers/``
(``helpers.emulator``, ``helpers.frames``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.emulator import DEFAULT_SCENARIO, Emulator, started_emulator
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
def emulator(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Emulator]:
    """``b10x-emulator`` serving the scenario the test names (an indirect parameter: the scenario, or the
    scenario and its options; ``flat-write`` when none is named), recording to ``tmp_path/emulator.jsonl``."""
    scenario, *options = getattr(request, "param", DEFAULT_SCENARIO).split()
    with started_emulator(scenario, tmp_path / "emulator.jsonl", *options) as running:
        yield running
