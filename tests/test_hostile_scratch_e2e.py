"""The child leaves the scratch root in a shape metaharness must still wind up (real Claude Code against
``b10x-emulator``, docs/adapters/common.md#child-trees): a tool's temporary tree thousands of folders
deep, beside a link to a folder of the caller's, is removed at the end without following the link, and
the run still ends with a closed stream, its report and its exit — never a traceback. (A hook request made
a terabyte by ``truncate``, and a flooded doorbell, are tried on the real hook channel in
``tests/test_child_tree_depth.py`` and ``tests/test_hook_channel.py``: Claude Code has no hook channel now,
and codex's and the loop's tools cannot reach one.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from codex_process import of, sealed_frame, well_formed
from helpers.emulator import running_emulator
from vendor_cli import pinned_cli

DEEP = 'cd "$TMPDIR" && mkdir -p "$(printf \'a/%.0s\' $(seq 1500))" && find a -type d | wc -l | sed "s/^/deep /"'
"""1,500 folders in one ``mkdir -p``: deeper than Python's recursion limit, shorter than ``PATH_MAX``."""


def caller_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "claude").symlink_to(pinned_cli("claude") or "")
    return home


def audited(tmp_path: Path) -> list[str]:
    """``--audit`` with a stub auditor that always says ok, so the control verdict is the run's own."""
    (tmp_path / "spec.md").write_text("any\n")
    auditor = tmp_path / "auditor"
    auditor.write_text('#!/bin/sh\necho \'{"row":"A1","verdict":"ok","detail":"d"}\'\n')
    auditor.chmod(0o755)
    return ["--audit", "--spec", str(tmp_path / "spec.md"), "--auditor", str(auditor)]


def claude_run(tmp_path: Path, steps: list[str], kept: Path) -> tuple[int, list[dict[str, Any]], str]:
    """``metaharness run claude`` against ``b10x-emulator`` running ``steps`` as Bash calls, audited."""
    home = caller_home(tmp_path)
    prompt = "do the steps\n" + "".join(f"$ {step}\n" for step in steps)
    with running_emulator("--scenario", "claude-bash-steps") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "claude", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "-p", prompt, "--retain-dir", str(kept),
                "--frame", sealed_frame(tmp_path, ["shell"]), *audited(tmp_path)]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=240,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    return done.returncode, well_formed(done.stdout.splitlines(keepends=True)), done.stderr.decode()


@pytest.mark.skipif(pinned_cli("claude") is None, reason="the pinned Claude Code is not installed")
def test_a_deep_tree_and_a_planted_link_in_the_scratch_root_are_wound_up(tmp_path: Path) -> None:
    host = tmp_path / "host"
    (host / "inner").mkdir(parents=True)
    (host / "inner" / "precious").write_text("the caller's file\n")
    kept = tmp_path / "kept"
    kept.mkdir()
    linking = f'ln -s {host} "$TMPDIR/to-host"; ln -s {host}/inner "$TMPDIR/a/to-inner"; echo linked'
    code, events, stderr = claude_run(tmp_path, [DEEP, linking], kept)
    results = json.dumps(of(events, "tool.result"))
    assert "deep 1500" in results and "linked" in results, stderr
    assert events[-1]["event"] == "stream.closed", events[-1]
    assert "Traceback" not in stderr and "internal-error" not in stderr, stderr[-3000:]
    assert "control verdict: ok" in stderr and code == 0, stderr[-3000:]
    scratch = Path(of(events, "session.started")[0]["cwd"]).parent
    assert not os.path.lexists(scratch), sorted(os.listdir(scratch))
    assert (host / "inner" / "precious").read_text() == "the caller's file\n"
    assert sorted(str(p.relative_to(host)) for p in host.rglob("*")) == ["inner", "inner/precious"]


@pytest.mark.skipif(pinned_cli("codex") is None, reason="the pinned Codex CLI is not installed")
def test_a_deep_tree_a_codex_tool_made_in_its_tmpdir_is_wound_up(tmp_path: Path) -> None:
    """Codex's own sandbox lets a shell call under ``--cwd`` write its ``TMPDIR`` in the scratch root."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "codex").symlink_to(pinned_cli("codex") or "")
    work = tmp_path / "work"
    work.mkdir()
    prompt = f"do the steps\n$ {DEEP}\n"
    with running_emulator("--scenario", "codex-shell-steps") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "codex", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "-p", prompt, "--cwd", str(work),
                "--frame", sealed_frame(tmp_path, ["shell"]), *audited(tmp_path)]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=240,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    stderr = done.stderr.decode()
    events = well_formed(done.stdout.splitlines(keepends=True))
    assert "deep 1500" in json.dumps(of(events, "tool.result")), stderr[-3000:]
    assert events[-1]["event"] == "stream.closed" and "Traceback" not in stderr, stderr[-3000:]
    assert "internal-error" not in stderr and "control verdict: " in stderr, stderr[-3000:]
    (scratch,) = set(re.findall(r"(/[^\s,;]*/metaharness-codex-[^/\s,;]+)/", stderr))
    assert not os.path.lexists(scratch), sorted(os.listdir(scratch))
