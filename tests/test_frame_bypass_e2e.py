"""A frame admitting writes only to ``file:src/**`` holds against the real vendors (against
``b10x-emulator``): Codex's indented patch headers are subjects, and a write through the in-tree link
``src/up -> ..`` is judged by the path it really reaches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from codex_process import sealed_frame, well_formed
from helpers.emulator import running_emulator
from vendor_cli import pinned_cli

SRC_ONLY = [
    {"subject": "file:src/**", "operations": [{"op": "file.write"}, {"op": "file.edit"}]},
    {"subject": "file:**", "operations": [{"op": "file.read"}]},
]


def governed_run(kind: str, scenario: str, work: Path, frame: str) -> list[dict[str, Any]]:
    with running_emulator("--scenario", scenario) as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", kind, "--credentials", "none"]
        argv += ["--model-endpoint", base_url.removesuffix("/v1"), "--cwd", str(work), "-p", "write the note"]
        argv += ["--decisions", "frame", "--frame", frame]
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return well_formed(done.stdout.splitlines(keepends=True))


def the_call(events: list[dict[str, Any]], name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    (requested,) = [e for e in events if e["event"] == "tool.requested" and e["name"] == name]
    (decided,) = [e for e in events if e["event"] == "tool.decided" and e["call_id"] == requested["call_id"]]
    return requested, decided


@pytest.mark.skipif(pinned_cli("codex") is None, reason="the pinned Codex CLI is not installed")
def test_indented_patch_headers_are_subjects_and_the_patch_is_denied(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "README.md").write_text("protected\n")
    frame = sealed_frame(tmp_path, ["file.read", "file.write", "file.edit"], SRC_ONLY)
    events = governed_run("codex", "codex-patch-padded", work, frame)
    requested, decided = the_call(events, "apply_patch")
    assert requested["subjects"] == ["file:src/ok.md", "file:note.md", "file:README.md"]
    assert decided["decision"]["decision"] == "deny" and decided["decided_by"] == "frame"
    assert decided["decision"]["reason"].startswith("file:note.md falls under the subject rule file:**")
    assert (work / "README.md").read_text() == "protected\n"
    assert not (work / "note.md").exists() and not (work / "src" / "ok.md").exists()


@pytest.mark.skipif(pinned_cli("claude") is None, reason="the pinned Claude Code is not installed")
def test_a_write_through_an_in_tree_link_is_judged_where_it_lands(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "up").symlink_to("..")
    frame = sealed_frame(tmp_path, ["file.read", "file.write", "file.edit"], SRC_ONLY)
    events = governed_run("claude", "claude-write-through-link", work, frame)
    requested, decided = the_call(events, "Write")
    assert requested["subjects"] == ["file:note.md"]
    assert requested["input"]["file_path"].endswith("/src/up/note.md")
    assert decided["decision"]["decision"] == "deny" and decided["decided_by"] == "frame"
    assert not (work / "note.md").exists()
    assert events[-1]["reason"] == "completed"
