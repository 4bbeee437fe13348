"""``metaharness project`` run as the installed script (docs/cli.md#project)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def metaharness(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """``metaharness project *args`` in ``cwd``, output captured."""
    script = Path(sys.executable).with_name("metaharness")
    return subprocess.run([str(script), "project", *args], capture_output=True, cwd=cwd, check=False, timeout=60)
