"""The README's example, ``examples/eval/run``, as a person on a fresh machine runs it: two arms of
the project's loop that differ in their frame, against the emulator, scored in the seed's shape."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_example_plan_scores_both_arms(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = subprocess.run(
        [str(ROOT / "examples" / "eval" / "run"), str(out)],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[-2:] == ["src-only: 6 pass / 4 fail", "note-admitted: 10 pass / 0 fail"]
    results = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    denied = [check for check in results[0]["checks"] if not check["passed"]]
    assert [check["id"] for check in denied] == ["nothing-denied", "note-written"]
    assert (out / "report.html").is_file() and (out / "runs" / "write-note" / "note-admitted" / "2" / "page.html").is_file()
