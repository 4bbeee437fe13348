"""Conformance C3's scripted child runs only for a kind whose adapter scripts its vendor
(``metaharness.shell.adapters.LiveAdapter.scripted_child``); any other name is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("name", ["b10x", "acme"])
def test_a_kind_without_a_scripted_vendor_is_refused(tmp_path: Path, name: str) -> None:
    record = tmp_path / "record.jsonl"
    record.write_bytes(b'{"type":"assistant"}\n')
    done = subprocess.run(
        [sys.executable, "-m", "metaharness.shell.conformance_child", name, str(record), str(record),
         str(tmp_path / "hook"), str(tmp_path / "answer")],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"metaharness: unscripted-kind: {name} names no kind whose vendor conformance C3 scripts"
    ]
    assert done.stdout == "" and not (tmp_path / "answer").exists()
