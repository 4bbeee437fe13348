"""The pinned vendor CLIs as a run's child finds them: the first ``claude`` or ``codex`` on the PATH
floor (``$HOME/.local/bin`` first, where ``vendors/install.sh`` links them) whose ``--version`` names
the pin of ``vendors/package-lock.json`` (spec 30 §7, spec 50 §7). Each is probed once per session."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache

from metaharness.pure.environment import path_floor

PINS = {"claude": "2.1.332", "codex": "0.171.0"}


@cache
def pinned_cli(kind: str) -> str | None:
    """The path of the pinned ``kind`` CLI on the child's PATH floor, or None when it is absent or
    answers another version."""
    found = shutil.which(kind, path=path_floor(dict(os.environ)))
    if found is None:
        return None
    done = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60, check=False)
    return found if PINS[kind] in done.stdout.split() else None
