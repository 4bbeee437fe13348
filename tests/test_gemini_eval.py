"""A ``metaharness-eval`` arm of kind gemini: the real pinned Gemini CLI governed against the emulator's
Generative Language wire, scored beside a b10x arm with the same checks (docs/eval.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_world import emulators, make_world, run_eval, summary, write_plan
from gemini_process import GEMINI, PINNED

pytestmark = pytest.mark.skipif(GEMINI is None, reason=f"the pinned Gemini CLI {PINNED} is not on the child's PATH")

TASK = {
    "id": "write-note",
    "prompt": "Write note.md",
    "workspace": {"git": "repo", "ref": "HEAD"},
    "timeout": 120,
    "checks": [
        {"id": "allowed", "event": {"event": "tool.decided", "decision.decision": "allow"}},
        {"id": "nothing-denied", "census": {"denied": 0}},
        {"id": "note-written", "file": {"path": "note.md", "contains": "written by the"}},
        {"id": "finished", "exit": 0},
    ],
}


def test_a_gemini_arm_runs_governed_and_is_scored_beside_b10x(tmp_path: Path) -> None:
    root = make_world(tmp_path)
    assert GEMINI is not None
    (root / "home" / ".local" / "bin" / "gemini").symlink_to(GEMINI)
    with emulators("flat-write", "gemini-write") as urls:
        arms = {
            "b10x": {"kind": "b10x", "model": "b10x-emulated", "model-endpoint": urls["flat-write"],
                     "frame": "write.frame.json"},
            "gemini": {"kind": "gemini", "credentials": "none", "frame": "write.frame.json",
                       "model-endpoint": urls["gemini-write"].removesuffix("/v1")},
        }  # fmt: skip
        write_plan(root, arms, [TASK])
        done = run_eval(root, "plan.yaml", "--out", "out", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    results = {result["arm"]: result for result in summary(root / "out")}
    assert set(results) == {"b10x", "gemini"}
    gemini = results["gemini"]
    assert gemini["state"] == "finished" and gemini["exit"] == 0, json.dumps(gemini)
    assert all(check["passed"] for check in gemini["checks"]), json.dumps(gemini["checks"])
    events = (root / "out" / "runs" / "write-note" / "gemini" / "1" / "events.jsonl").read_text().splitlines()
    started = json.loads(events[0])
    assert started["event"] == "session.started" and started["adapter"] == "gemini"
