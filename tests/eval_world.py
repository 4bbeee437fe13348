"""What the ``metaharness-eval`` tests share: a git workspace, a HOME whose ``.local/bin`` links the
project's loop and the pinned Codex CLI, sealed frames, emulators, a plan of 3 tasks × 2 arms, the
command run as the installed script, and a local Ray cluster started on loopback and stopped by pid."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from helpers.emulator import running_emulator
from vendor_cli import pinned_cli

from metaharness.pure.frames import frame_document, seal_frame

VENV_BIN = Path(sys.executable).parent
EVAL = VENV_BIN / "metaharness-eval"
READS = [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]
FRAME_BASE = {
    "workflow": {"id": "w", "version": "1"},
    "node": {"id": "n"},
    "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
    "prior": [],
    "obligations": [],
    "reaching": [],
    "next": [],
    "handoff": {"handoff": "none"},
}


def git(repository: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repository), "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        check=True, capture_output=True,
    )


def make_world(root: Path) -> Path:
    """``root`` holding ``repo`` (two commits: the first without docs/brief.md, tagged ``bare``),
    ``home`` and the frames ``write.frame.json`` and ``read.frame.json``; returns ``root``."""
    repository = root / "repo"
    repository.mkdir(parents=True)
    git(repository, "init", "-q")
    (repository / "README.md").write_text("hello harness\n")
    (repository / "logo.bin").write_bytes(bytes(range(256)))
    git(repository, "add", "-A")
    git(repository, "commit", "-qm", "first")
    git(repository, "tag", "bare")
    (repository / "docs").mkdir()
    (repository / "docs" / "brief.md").write_text("Write a short note.\n")
    git(repository, "add", "-A")
    git(repository, "commit", "-qm", "brief")
    home = root / "home" / ".local" / "bin"
    home.mkdir(parents=True)
    (home / "b10x-harness").symlink_to(VENV_BIN / "b10x-harness")
    codex = pinned_cli("codex")
    if codex is not None:
        (home / "codex").symlink_to(codex)
    for name, operations in (("write", [*READS, {"op": "file.write"}, {"op": "file.edit"}]), ("read", READS)):
        sealed = seal_frame({**FRAME_BASE, "operations": operations}).unwrap()
        (root / f"{name}.frame.json").write_bytes(frame_document(sealed))
    return root


@contextmanager
def emulators(*scenarios: str) -> Iterator[dict[str, str]]:
    """One ``b10x-emulator`` per scenario; yields scenario → base URL (with ``/v1``)."""
    with running_emulator("--scenario", scenarios[0]) as (first, _):
        if len(scenarios) == 1:
            yield {scenarios[0]: first}
        else:
            with emulators(*scenarios[1:]) as rest:
                yield {scenarios[0]: first, **rest}


def arms(urls: dict[str, str]) -> dict[str, dict]:
    """b10x against ``flat-write`` and codex against ``codex-patch``, both framed to write."""
    return {
        "b10x": {"kind": "b10x", "model": "b10x-emulated", "model-endpoint": urls["flat-write"], "frame": "write.frame.json"},
        "codex": {
            "kind": "codex", "credentials": "none", "model-endpoint": urls["codex-patch"].removesuffix("/v1"),
            "frame": "write.frame.json",
        },
    }


TASKS = [
    {
        "id": "write-note",
        "prompt": "Write note.md",
        "workspace": {"git": "repo", "ref": "HEAD"},
        "timeout": 120,
        "checks": [
            {"id": "allowed", "event": {"event": "tool.decided", "decision.decision": "allow"}},
            {"id": "nothing-denied", "census": {"denied": 0}},
            {"id": "note-by-harness", "file": {"path": "note.md", "contains": "harness"}},
            {"id": "finished", "exit": 0},
        ],
    },
    {
        "id": "leave-readme",
        "prompt": "Leave the tree alone",
        "workspace": {"git": "repo", "ref": "bare"},
        "timeout": 120,
        "checks": [
            {"id": "readme-kept", "file": {"path": "README.md", "contains": "hello harness"}},
            {"id": "no-note", "file": {"path": "note.md", "exists": False}},
            {"id": "write-by-frame", "decided": {"name": "file_write", "decision": "allow", "by": "frame"}},
        ],
    },
    {
        "id": "with-brief",
        "prompt": "Read the brief, then write",
        "workspace": {"git": "repo", "ref": "HEAD"},
        "context": ["docs/brief.md"],
        "timeout": 120,
        "checks": [
            {"id": "one-session", "event": {"event": "session.started"}, "at-least": 1, "at-most": 1},
            {"id": "no-deny", "event": {"event": "tool.decided", "decision.decision": "deny"}, "at-most": 0},
        ],
    },
]


def write_plan(root: Path, plan_arms: dict, tasks: list[dict], name: str = "plan.yaml", repeat: int = 1) -> Path:
    path = root / name
    path.write_text(yaml.safe_dump({"format": "metaharness.eval/1", "arms": plan_arms, "tasks": tasks, "repeat": repeat}))
    return path


def run_eval(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``metaharness-eval *args`` with HOME ``root/home``, temporary files under ``root/tmp``."""
    (root / "tmp").mkdir(exist_ok=True)
    env = {"HOME": str(root / "home"), "PATH": os.environ["PATH"], "TMPDIR": str(root / "tmp")}
    return subprocess.run(
        [str(EVAL), *args], env=env, cwd=root, capture_output=True, text=True, timeout=timeout, check=False
    )


def summary(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]


def without_timings(results: list[dict]) -> list[dict]:
    return [{key: value for key, value in result.items() if key != "duration_ms"} for result in results]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def ray_cluster(home: Path, scratch: Path) -> Iterator[str]:
    """``ray start --head --block`` on 127.0.0.1 with HOME ``home`` (so its workers find the loop)
    and TMPDIR ``scratch`` (where a killed worker's run directory stays); yields its address;
    stopped by SIGTERM to that one process, which stops what it started."""
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    port = _free_port()
    env = {**os.environ, "HOME": str(home), "TMPDIR": str(scratch), "RAY_USAGE_STATS_ENABLED": "0"}
    process = subprocess.Popen(
        [
            str(VENV_BIN / "ray"), "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port", str(port),
            "--num-cpus", "2", "--include-dashboard=false", "--disable-usage-stats", "--temp-dir", temp,
        ],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if "Ray runtime started" in line:
                break
        else:
            raise AssertionError("ray start ended before the runtime started")
        threading.Thread(target=process.stdout.read, daemon=True).start()
        yield f"127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
        shutil.rmtree(temp, ignore_errors=True)
