"""The child leaves the scratch root in a shape metaharness must still wind up (real Claude Code against
``b10x-emulator``, docs/adapters/common.md#child-trees): a tool's temporary tree thousands of folders
deep, beside a link to a folder of the caller's, is removed at the end without following the link, and
the run still ends with a closed stream, its report and its exit — never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from codex_process import of, sealed_frame, well_formed
from emulator_process import running_emulator
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


@pytest.mark.skipif(pinned_cli("claude") is None, reason="the pinned Claude Code is not installed")
def test_a_deep_tree_and_a_planted_link_in_the_scratch_root_are_wound_up(tmp_path: Path) -> None:
    home = caller_home(tmp_path)
    host = tmp_path / "host"
    (host / "inner").mkdir(parents=True)
    (host / "inner" / "precious").write_text("the caller's file\n")
    kept = tmp_path / "kept"
    kept.mkdir()
    prompt = f'do the steps\n$ {DEEP}\n$ ln -s {host} "$TMPDIR/to-host"; ln -s {host}/inner "$TMPDIR/a/to-inner"; echo linked\n'
    with running_emulator("--scenario", "claude-bash-steps") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "claude", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "-p", prompt, "--retain-dir", str(kept),
                "--frame", sealed_frame(tmp_path, ["shell"]), *audited(tmp_path)]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=240,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    stderr = done.stderr.decode()
    events = well_formed(done.stdout.splitlines(keepends=True))
    results = json.dumps(of(events, "tool.result"))
    assert "deep 1500" in results and "linked" in results, stderr
    assert events[-1]["event"] == "stream.closed", events[-1]
    assert "Traceback" not in stderr and "internal-error" not in stderr, stderr[-3000:]
    assert "control verdict: ok" in stderr and done.returncode == 0, stderr[-3000:]
    scratch = Path(of(events, "session.started")[0]["cwd"]).parent
    assert not os.path.lexists(scratch), sorted(os.listdir(scratch))
    assert (host / "inner" / "precious").read_text() == "the caller's file\n"
    assert sorted(str(p.relative_to(host)) for p in host.rglob("*")) == ["inner", "inner/precious"]
