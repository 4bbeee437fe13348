"""Recognising the loop this distribution ships (docs/adapters/b10x.md#program-and-version): the resolved program is,
links and all, the ``b10x-harness`` entry point installed beside the Python running metaharness."""

from __future__ import annotations

import os
import stat
import sysconfig

from metaharness import __version__
from metaharness.pure.b10x.vendor import PROGRAM


def own_loop_version(program: str) -> str | None:
    """This distribution's version when ``program`` is, links and all, the ``b10x-harness`` entry point installed
    beside the Python running metaharness (docs/adapters/b10x.md#program-and-version); else ``None``."""
    own = os.path.join(sysconfig.get_path("scripts"), PROGRAM)
    try:
        same = os.path.samefile(program, own) and stat.S_ISREG(os.stat(own).st_mode)
    except OSError:
        return None
    return __version__ if same else None
