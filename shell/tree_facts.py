"""What a run's rows read of its directories: the memory walk above the child's directory (stage 7,
docs/hermetic.md#memory-file-walk) and a directory's identity (docs/hermetic.md#verdicts H7).

Apart from ``metaharness.shell.facts`` so the options' stages gather their facts without the rows' structs
(docs/DEVELOPING.md#dependency-direction: a refusal imports only what deciding it needs).
"""

from __future__ import annotations

import os

from metaharness.pure.hermetic import DirectoryIdentity, MemoryWalk, memory_walk
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
