"""Gathering the facts the pure stages decide over: the caller's environment, PATH candidates,
credential files, lstat of memory shapes, stat of directories (docs/hermetic.md#memory-file-walk, #environment-floor,
#credentials), and what a harness binary answers to a probe (``--version``, ``--help``; docs/adapters/common.md#doctor,
docs/adapters/common.md#pins).

Nothing here decides; each function reads the world once and returns plain values or pure structs.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from metaharness.pure.environment import ProgramCandidate, program_candidates

if TYPE_CHECKING:
    import subprocess


def own_cli(interpreter: str = sys.executable) -> tuple[str, ...]:
    """The argv that starts this package's own CLI: ``<interpreter> -m metaharness.shell``, the Python
    running metaharness by default, or nothing when that interpreter cannot be named (docs/adapters/claude.md;
    docs/adapters/codex.md)."""
    return (interpreter, "-m", "metaharness.shell") if interpreter else ()


def caller_environment() -> dict[str, str]:
    """A snapshot of metaharness's own environment: the caller's map the pure stages read."""
    return dict(os.environ)


def gather_program_candidates(name: str, path: str) -> dict[str, ProgramCandidate]:
    """For each ``<dir>/<name>`` on ``path``: a regular file (symlinks followed) and executable by
    the caller (docs/hermetic.md#environment-floor, docs/adapters/b10x.md#program-and-version). Candidates that do
    not exist are left out."""
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


def existing_shapes(directory: str, shapes: tuple[str, ...]) -> tuple[str, ...]:
    """The memory shapes under ``directory`` on which ``lstat`` succeeds (docs/hermetic.md#memory-file-walk). A shape
    ending ``/*.md`` names every ``*.md`` entry directly in that sub-directory. The child's directory and its
    ancestors are read by name before the launch, while no child runs."""
    found: list[str] = []
    for shape in shapes:
        if shape.endswith("/*.md"):
            folder = os.path.join(directory, shape[: -len("/*.md")])
            try:
                names = sorted(os.listdir(folder))
            except OSError:
                continue
            found.extend(
                os.path.join(shape[: -len("*.md")], name) for name in names if name.endswith(".md")
            )
            continue
        try:
            os.lstat(os.path.join(directory, shape))
        except OSError:
            continue
        found.append(shape)
    return tuple(found)


def gather_memory_facts(start: str, shapes: tuple[str, ...]) -> tuple[str, dict[str, tuple[str, ...]]]:
    """The real path of ``start`` (symlinks resolved) and, for it and each ancestor up to ``/``, the
    names found there: the facts :func:`metaharness.pure.hermetic.memory_walk` decides over
    (docs/hermetic.md#memory-file-walk). ``shapes`` is ``MEMORY_SHAPES[kind]``."""
    real = os.path.realpath(start)
    found: dict[str, tuple[str, ...]] = {}
    directory = real
    while True:
        found[directory] = existing_shapes(directory, shapes)
        parent = os.path.dirname(directory)
        if parent == directory:
            return real, found
        directory = parent


def run_probe(
    argv: Sequence[str], env: dict[str, str], *, timeout_s: float, cwd: str | None = None
) -> subprocess.CompletedProcess[bytes] | None:
    """``argv`` run once with ``env`` (stdin ``/dev/null``, output captured), or ``None`` when it could
    not be started or outlived ``timeout_s``. ``subprocess`` is loaded at the first probe, so the options' stages,
    which gather PATH candidates here, start without it."""
    import subprocess

    try:
        return subprocess.run(
            list(argv), env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def probe_stdout(argv: Sequence[str], env: dict[str, str], *, timeout_s: float, cwd: str | None = None) -> str | None:
    """What :func:`run_probe` printed on stdout, decoded leniently, or ``None`` when it did not run."""
    done = run_probe(argv, env, timeout_s=timeout_s, cwd=cwd)
    return None if done is None else done.stdout.decode("utf-8", "replace")
