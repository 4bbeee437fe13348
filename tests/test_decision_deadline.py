"""``run --decision-deadline DURATION`` (docs/decisions.md#deadlines): an asked call waits that long on
every kind, and a vendor's hook is declared the deadline + 5 s so the deadline stays metaharness's.
Each kind runs for real against ``b10x-emulator`` under ``--decisions ask``; the test answers the asked
call over stdin once its ``tool.requested`` names the deadline, and reads the hook budget the run
declared from its ``--retain-dir`` copies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from governed_b10x import LOOP
from helpers.emulator import running_emulator
from vendor_cli import home_linking_the_clis, pinned_cli

from metaharness.pure.claude.replay import replay_facts
from metaharness.pure.claude.session import ToChild, open_session
from metaharness.pure.run_stages import decision_budget_ms

METAHARNESS = str(Path(sys.executable).with_name("metaharness"))
SCENARIOS = {"b10x": "flat-write", "claude": "claude-write", "codex": "codex-patch"}
CASES = [pytest.param(kind, marks=pytest.mark.skipif(kind != "b10x" and pinned_cli(kind) is None, reason=f"no pinned {kind}"))
         for kind in SCENARIOS]  # fmt: skip


def hook_timeout(kind: str, kept: Path) -> int | None:
    """The hook timeout the run's generated files declare (claude's is in the ``initialize`` it is sent, below)."""
    if kind == "codex":
        lines = (kept / "codex-home" / "config.toml").read_text().splitlines()
        return int(next(line for line in lines if line.startswith("timeout = ")).split("=")[1])
    return None


@pytest.mark.parametrize("kind", CASES)
def test_an_asked_call_waits_as_long_as_the_run_says(kind: str, tmp_path: Path) -> None:
    home = home_linking_the_clis(tmp_path / "home")
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    work, kept = tmp_path / "work", tmp_path / "kept"
    work.mkdir()
    kept.mkdir()
    with running_emulator("--scenario", SCENARIOS[kind]) as (base_url, _):
        endpoint = base_url if kind == "b10x" else base_url.removesuffix("/v1")
        argv = [METAHARNESS, "run", kind, "--decisions", "ask", "--decision-deadline", "2m", "--credentials", "none",
                "--model-endpoint", endpoint, "--cwd", str(work), "--retain-dir", str(kept), "-p", "write the note",
                *(["--model", "b10x-emulated"] if kind == "b10x" else [])]  # fmt: skip
        run = subprocess.Popen(argv, env={"HOME": str(home), "PATH": os.environ["PATH"]}, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        assert run.stdin is not None and run.stdout is not None
        asked = None
        for line in run.stdout:
            event = json.loads(line)
            if event["event"] == "tool.requested" and event["decision_required"]:
                asked = event
                answer = {"format": "metaharness.command/1", "id": "a1", "command": "tool.decide",
                          "call_id": event["call_id"], "decision": {"decision": "deny", "reason": "not now"}}  # fmt: skip
                run.stdin.write(json.dumps(answer).encode() + b"\n")
                run.stdin.flush()
            if event["event"] == "stream.closed":
                break
        run.stdin.close()
        code = run.wait(timeout=120)
    assert asked is not None and asked["deadline_ms"] == 120000
    assert code == 0, run.stderr.read().decode() if run.stderr else ""
    assert hook_timeout(kind, next(kept.iterdir())) in (None, 125)


def test_a_deadline_past_the_hook_budget_is_a_usage_refusal() -> None:
    done = subprocess.run([METAHARNESS, "run", "b10x", "--decision-deadline", "11m"], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("metaharness: usage: ") and "past the longest decision deadline, 595s" in done.stderr


def test_claude_is_initialized_with_the_deadline_s_budget() -> None:
    """Claude Code's callback timeout travels in the ``initialize`` request (docs/adapters/claude.md#in-band-decisions):
    ``--decision-deadline 2m`` gives it 125 s, the desk's deadline 120 s."""
    facts = replay_facts(decisions="ask", hermetic="off", transcript_path="t", harness_version=None, model=None)
    _, effects = open_session(facts, "r", "ask", None, vendor_budget_ms=decision_budget_ms(120.0, 60000))
    (initialize,) = [effect.line for effect in effects if isinstance(effect, ToChild)]
    matcher = json.loads(initialize)["request"]["hooks"]["PreToolUse"][0]
    assert matcher["timeout"] == 125 and matcher["onFailure"] == "block"
