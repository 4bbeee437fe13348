"""The pinned vendor CLIs as a run's child finds them: the first ``claude``, ``codex`` or ``gemini`` on the PATH
floor (``$HOME/.local/bin`` first, where ``vendors/install.sh`` links them) whose ``--version`` names
the pin of ``vendors/package-lock.json`` (docs/hermetic.md#environment-floor, docs/adapters/common.md#pins). Each is
probed once per session."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from metaharness.pure.adapters import adapter_of
from metaharness.pure.environment import path_floor

PINS = {kind: adapter_of(kind).pins[0] for kind in ("claude", "codex", "gemini")}


@cache
def pinned_cli(kind: str) -> str | None:
    """The path of the pinned ``kind`` CLI on the child's PATH floor, or None when it is absent or
    answers another version. The probe runs under a throwaway HOME (``codex --version`` writes below
    its home), so it leaves nothing in the caller's."""
    found = shutil.which(kind, path=path_floor(dict(os.environ)))
    if found is None:
        return None
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "CODEX_HOME": home, "GEMINI_CLI_HOME": home}
        done = subprocess.run([found, "--version"], capture_output=True, text=True, env=env, timeout=60, check=False)
    return found if PINS[kind] in done.stdout.split() else None


def home_linking_the_clis(home: Path) -> Path:
    """A HOME of a test's own whose ``.local/bin`` links each pinned CLI that is installed: a run under it
    finds them on its PATH floor as under the caller's HOME, and what a CLI writes below HOME (Claude
    Code's MCP logs under ``.cache``, Codex's ``.codex/tmp``) lands in the test's tree, not the caller's."""
    (home / ".local" / "bin").mkdir(parents=True)
    for kind in PINS:
        found = pinned_cli(kind)
        if found is not None:
            (home / ".local" / "bin" / kind).symlink_to(found)
    return home
