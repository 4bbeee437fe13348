"""Frames at the boundary against the real vendors and the loop: under a frame whose rules admit only
``proc:git``, git options and aliases that run code or write elsewhere are denied before they act, while
a plain ``git status`` runs (docs/decisions.md#program-subjects). The emulator's step scenarios make each
``$ `` line of the task one shell call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.emulator import running_emulator
from helpers.frames import frame_skeleton
from vendor_cli import pinned_cli

from metaharness.pure.events import read_event
from metaharness.pure.frames import frame_document, seal_frame

SCENARIOS = {"claude": "claude-bash-steps", "codex": "codex-shell-steps", "b10x": "loop-run-steps"}
ATTACKS = [
    "git -c alias.x='!touch M1' x",
    "git -c core.fsmonitor='touch M2' status",
    "git -c core.sshCommand='touch M3' fetch ssh://example.invalid/r",
    "git log --output=M4",
    "env git -c alias.y='!touch M5' y",
]
READS = [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]
KINDS = [pytest.param(kind, marks=pytest.mark.skipif(kind != "b10x" and pinned_cli(kind) is None,
                                                     reason=f"no pinned {kind}"))
         for kind in SCENARIOS]  # fmt: skip


def git_only_frame(directory: Path) -> Path:
    """Shell admitted on ``proc:git`` alone (with the reads the loop runs unasked)."""
    raw = frame_skeleton("boundary/e2e", "git", "git", operations=[*READS, {"op": "shell"}], subjects=[{"subject": "proc:git", "operations": [*READS, {"op": "shell"}]},
                     {"subject": "file:**", "operations": READS}])  # fmt: skip
    path = directory / "git.frame.json"
    path.write_bytes(frame_document(seal_frame(raw).unwrap()))
    return path


def caller_home(tmp_path: Path, kind: str) -> Path:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".claude").mkdir()
    (home / ".codex").mkdir()
    if kind == "b10x":
        (home / ".local" / "bin" / "b10x-harness").symlink_to(Path(sys.executable).parent / "b10x-harness")
    else:
        (home / ".local" / "bin" / kind).symlink_to(pinned_cli(kind) or "")
    (home / ".claude" / ".credentials.json").write_text(json.dumps({"claudeAiOauth": {"accessToken": "sk-ant-oat01-x"}}))
    (home / ".codex" / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": "sk-boundary-key-0123456789abcdef"}))
    return home


def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("hello\n")
    return repo


@pytest.mark.parametrize("kind", KINDS)
def test_git_options_that_run_code_or_write_elsewhere_are_denied_under_a_proc_git_frame(kind: str, tmp_path: Path) -> None:
    home, repo = caller_home(tmp_path, kind), repository(tmp_path)
    prompt = "do the steps\n" + "".join(f"$ {step}\n" for step in ["git status", *ATTACKS])
    with running_emulator("--scenario", SCENARIOS[kind]) as (base_url, _):
        route = ["--model", "b10x-emulated", "--model-endpoint", base_url, "--allow-program", "git", "--allow-program",
                 "env"] if kind == "b10x" else ["--credentials", "loopback", "--model-endpoint", base_url.removesuffix("/v1")]  # fmt: skip
        argv = [sys.executable, "-m", "metaharness.shell", "run", kind, *route, "-p", prompt, "--cwd", str(repo),
                "--frame", str(git_only_frame(tmp_path))]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=240,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    events: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines() if read_event(line).unwrap()]
    requested = [e for e in events if e["event"] == "tool.requested" and e.get("seam") != "none"]
    decided = {e["call_id"]: e for e in events if e["event"] == "tool.decided"}
    assert len(requested) == 1 + len(ATTACKS), [e["input"] for e in requested]
    first, *attacks = requested
    assert decided[first["call_id"]]["decision"] == {"decision": "allow"} and first["subjects"] == ["proc:git"]
    for attack in attacks:
        assert "proc:sh" in attack["subjects"], attack
        verdict = decided[attack["call_id"]]
        assert verdict["decided_by"] == "frame" and verdict["decision"]["decision"] == "deny", verdict
    assert sorted(path.name for path in repo.iterdir()) == [".git", "README.md"]


@pytest.mark.parametrize("kind", [k for k in KINDS if k.values[0] != "b10x"])
def test_an_embedders_replacement_the_frame_does_not_admit_is_denied(kind: str, tmp_path: Path) -> None:
    """Ask mode under the ``proc:git`` frame: ``git status`` waits for the embedder, who replaces it with
    an alias that would run ``touch``; the replacement is checked like a call and denied
    (``replace-inadmissible``), and nothing lands in the repository."""
    home, repo = caller_home(tmp_path, kind), repository(tmp_path)
    replacement = {"command": "git -c alias.x='!touch M6' x", **({"description": "x"} if kind == "claude" else {})}
    with running_emulator("--scenario", SCENARIOS[kind]) as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", kind, "--credentials", "loopback",
                "--model-endpoint", base_url.removesuffix("/v1"), "-p", "do the steps\n$ git status\n", "--cwd",
                str(repo), "--frame", str(git_only_frame(tmp_path)), "--decisions", "ask"]  # fmt: skip
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env={**os.environ, "HOME": str(home)})  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        lines: list[bytes] = []
        while True:
            line = process.stdout.readline()
            assert line, b"".join(lines).decode()
            lines.append(line)
            event = json.loads(line)
            if event["event"] == "tool.requested" and event.get("decision_required"):
                command = {"format": "metaharness.command/1", "id": "r1", "command": "tool.decide",
                           "call_id": event["call_id"], "decision": {"decision": "replace", "input": replacement}}  # fmt: skip
                process.stdin.write(json.dumps(command).encode() + b"\n")
                process.stdin.flush()
                break
        out, _ = process.communicate(timeout=120)
    events = [json.loads(raw) for raw in lines + out.splitlines()]
    (warning,) = [e for e in events if e["event"] == "warning" and e["code"] == "replace-inadmissible"]
    (decided,) = [e for e in events if e["event"] == "tool.decided"]
    assert decided["decided_by"] == "frame" and decided["decision"]["decision"] == "deny"
    assert decided["call_id"] in warning["message"]
    assert sorted(path.name for path in repo.iterdir()) == [".git", "README.md"]
