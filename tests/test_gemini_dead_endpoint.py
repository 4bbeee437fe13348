"""The real Gemini CLI (pinned 0.61.0) against a dead ``--model-endpoint`` (one that accepts each connection
and closes it): the scratch settings allow one attempt per model request, so the run ends at its first request
with a named end instead of retrying with backoff for minutes (docs/adapters/gemini.md#settings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from closing_endpoint import CLOSING_ENDPOINT
from gemini_process import GEMINI, PINNED

pytestmark = [
    pytest.mark.skipif(GEMINI is None, reason=f"the pinned Gemini CLI {PINNED} is not on the child's PATH"),
    pytest.mark.usefixtures("own_home"),
]

METAHARNESS = str(Path(sys.executable).with_name("metaharness"))
BOUND_S = 90
"""Far below the ten attempts with backoff 0.61.0 makes by default (minutes), far above one start of the CLI."""


@pytest.mark.parametrize("confine", ["on", "off"])
def test_a_dead_endpoint_ends_the_run_at_its_first_request(tmp_path: Path, confine: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    argv = [METAHARNESS, "run", "gemini", "-p", "hi", "--credentials", "none", "--model-endpoint", CLOSING_ENDPOINT,
            "--decisions", "observe", "--cwd", str(work), "--confine", confine]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=BOUND_S, check=False)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    ended = [e for e in events if e["event"] == "session.ended"]
    assert done.returncode == 3, done.stderr
    assert len(ended) == 1 and ended[0]["is_error"] is True
    assert events[-1]["event"] == "stream.closed" and events[-1]["reason"] == "error"


def test_no_credentials_and_no_endpoint_end_the_run_before_any_request(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    argv = [METAHARNESS, "run", "gemini", "-p", "hi", "--credentials", "none", "--decisions", "observe",
            "--cwd", str(work), "--confine", "off"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=BOUND_S, check=False)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 3, done.stderr
    assert [e["code"] for e in events if e["event"] == "warning"] == ["NO_TERMINAL_RECORD"]
    assert events[-1]["event"] == "stream.closed" and events[-1]["reason"] == "error"
