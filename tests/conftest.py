"""Fixtures shared by the test modules; plain helpers live in their own modules beside this one
(``emulator_process``, ``loop_process``, ``governed_b10x``, ``project_verb``, ``shared_tree``)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A loop workspace ``tmp_path/ws`` holding one README.md."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("hello harness\n")
    return root
