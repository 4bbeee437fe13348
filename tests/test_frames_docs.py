"""docs/frames.md tells the truth: its example seals to the digests it states, and its sealing
snippet run as written produces a frame a run loads (docs/frames.md#2-seal-it)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from metaharness.pure.frames import load_frame, seal_frame

GUIDE = (Path(__file__).parent.parent / "docs" / "frames.md").read_text()


def block(language: str) -> str:
    found = re.search(rf"```{language}\n(.*?)```", GUIDE, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_example_seals_to_the_stated_digests() -> None:
    document = json.loads(block("json"))
    with_subjects = seal_frame(document).unwrap().digest
    del document["subjects"]
    without = seal_frame(document).unwrap().digest
    assert f"seals to `{with_subjects}`" in GUIDE
    assert f"without `subjects`: `{without}`" in GUIDE


def test_the_sealing_snippet_works_as_written(tmp_path: Path) -> None:
    (tmp_path / "step.json").write_text(block("json"))
    snippet = block("sh")
    program = snippet.split("<<'EOF'\n", 1)[1].rsplit("EOF", 1)[0]
    done = subprocess.run(
        [sys.executable, "-", "step.json"], input=program, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    frame = load_frame(done.stdout.encode()).unwrap()
    assert frame.digest == seal_frame(json.loads(block("json"))).unwrap().digest
