"""Gathering the facts the pure stages decide over: the caller's environment, PATH candidates and
credential files (spec 30 §7, §8).

Nothing here decides; each function reads the world once and returns plain values or pure structs.
"""

from __future__ import annotations

import os
import stat

from metaharness.pure.environment import ProgramCandidate, program_candidates


def caller_environment() -> dict[str, str]:
    """A snapshot of metaharness's own environment: the caller's map the pure stages read."""
    return dict(os.environ)


def gather_program_candidates(name: str, path: str) -> dict[str, ProgramCandidate]:
    """For each ``<dir>/<name>`` on ``path``: a regular file (symlinks followed) and executable by
    the caller (spec 30 §7, spec 40 §3.3). Candidates that do not exist are left out."""
    found: dict[str, ProgramCandidate] = {}
    for candidate in program_candidates(name, path):
        try:
            status = os.stat(candidate)
        except OSError:
            continue
        found[candidate] = ProgramCandidate(
            regular=stat.S_ISREG(status.st_mode), executable=os.access(candidate, os.X_OK)
        )
    return found


def readable_regular_file(path: str | None) -> bool:
    """Whether ``path`` names a regular file the caller can read (``credential-file-missing``)."""
    if path is None:
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode) and os.access(path, os.R_OK)
    except OSError:
        return False
