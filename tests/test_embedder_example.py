"""``examples/embedder.py`` (docs/library.md#an-ask-mode-embedder), run as a real process around a real
``metaharness run b10x --decisions ask`` against the real ``b10x-emulator`` (scenario ``flat-write``):
it answers the asked write on the run's stdin, deny unless ``--allow file.write`` names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from governed_b10x import LOOP, METAHARNESS, common, workspace
from helpers.emulator import started_emulator

EMBEDDER = Path(__file__).resolve().parents[1] / "examples" / "embedder.py"


@pytest.mark.parametrize(("allow", "expected"), [((), "deny"), (("--allow", "file.write"), "allow")])
def test_the_example_embedder_answers_the_asked_call(tmp_path: Path, allow: tuple[str, ...], expected: str) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    work = workspace(tmp_path)
    with started_emulator("flat-write", tmp_path / "emulator.jsonl") as emulator:
        argv = [sys.executable, str(EMBEDDER), "--metaharness", str(METAHARNESS), *allow, "--", "b10x",
                *common(emulator.base_url, work)]  # fmt: skip
        done = subprocess.run(argv, env={"HOME": str(home), "PATH": os.environ["PATH"]}, capture_output=True,
                              timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    events = [json.loads(line) for line in done.stdout.splitlines()]
    decided = next(e for e in events if e["event"] == "tool.decided")
    assert (decided["decided_by"], decided["decision"]["decision"]) == ("embedder", expected)
    assert f"embedder: file_write call_b10x_001 → {expected}" in done.stderr.decode()
    assert (work / "note.md").exists() == (expected == "allow")
    assert events[-1]["event"] == "stream.closed"
