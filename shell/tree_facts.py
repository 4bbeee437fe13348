"""What a run's rows read of its directories: the memory walk above the child's directory (stage 7,
docs/hermetic.md#memory-file-walk) and a directory's identity (docs/hermetic.md#verdicts H7).

Apart from ``metaharness.shell.facts`` so the options' stages gather their facts without the rows' structs
(docs/DEVELOPING.md#dependency-direction: a refusal imports only what deciding it needs).
"""

from __future__ import annotations

import os
import stat

from metaharness.pure.hermetic import DirectoryIdentity, MemoryWalk, memory_walk
from metaharness.pure.refusal import Refusal
from metaharness.shell.facts import gather_memory_facts


def memory_walk_of(cwd: str | None, shapes: tuple[str, ...]) -> MemoryWalk:
    """Stage 7's memory walk (docs/hermetic.md#memory-file-walk): above ``cwd``, or, for a scratch run (``None``),
    above the temporary directory the scratch root is created in."""
    if cwd is None:
        import tempfile  # here, not at the top: a refusal before stage 7 needs none of what tempfile loads

        return memory_walk(*gather_memory_facts(tempfile.gettempdir(), shapes), scratch_parent=True)
    return memory_walk(*gather_memory_facts(cwd, shapes))


def directory_identity(path: str) -> DirectoryIdentity:
    """A directory's real path, with device and inode when it can be stat'ed (docs/hermetic.md#verdicts H7:
    directories are compared as directories, not as spellings)."""
    real = os.path.realpath(path)
    try:
        status = os.stat(path)
    except OSError:
        return DirectoryIdentity(real_path=real)
    return DirectoryIdentity(real_path=real, device=status.st_dev, inode=status.st_ino)


def special_entry(directory: str) -> str | None:
    """The first entry beneath ``directory`` (walked without following a link) that is no regular file, directory
    or link: a FIFO, socket or device, which a copy would block on or read without end (docs/cli.md#bounds-on-what-a-run-reads).
    A ``--plugin-dir`` is the operator's tree, walked by name before the launch, while no child runs."""
    for base, directories, names in os.walk(directory):
        for name in sorted((*directories, *names)):
            path = os.path.join(base, name)
            mode = os.lstat(path).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                return path
    return None


def special_entry_refusal(directories: tuple[str, ...]) -> Refusal | None:
    """``plugin-dir-unusable`` for the first ``--plugin-dir`` holding a :func:`special_entry`."""
    for directory in directories:
        entry = special_entry(directory)
        if entry is not None:
            return Refusal(
                "plugin-dir-unusable",
                f"--plugin-dir {directory} holds {entry}, which is no regular file, directory or link: a FIFO, socket "
                "or device is never copied",
            )
    return None
