"""The run's working directory read for its ``--retain-dir`` diff (``metaharness.pure.workspace_diff``):
every regular file below it, walked without following a link, each opened ``O_NOFOLLOW|O_NONBLOCK``
and checked regular on its descriptor, so a link, FIFO or device the child planted is skipped, never
read through. ``.git`` directories are not walked. At most :data:`SNAPSHOT_FILES` files, and at most
:data:`SNAPSHOT_BYTES` of their bytes are kept (past that a file is compared by digest only)."""

from __future__ import annotations

import hashlib
import os
import stat

from metaharness.pure.workspace_diff import FILE_TEXT_LIMIT, FileState

SNAPSHOT_FILES = 20000
SNAPSHOT_BYTES = 64 * 1024 * 1024
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _file_state(path: str, budget: int) -> FileState | None:
    try:
        descriptor = os.open(path, _FLAGS)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        digest, kept, size = hashlib.sha256(), bytearray(), 0
        while chunk := handle.read(1 << 16):
            digest.update(chunk)
            size += len(chunk)
            if size <= min(FILE_TEXT_LIMIT, budget):
                kept += chunk
    return FileState(digest.hexdigest(), bytes(kept) if size <= min(FILE_TEXT_LIMIT, budget) else None)


def snapshot(root: str) -> dict[str, FileState]:
    """Each regular file below ``root`` by its path relative to it."""
    files: dict[str, FileState] = {}
    budget = SNAPSHOT_BYTES
    for folder, directories, names in os.walk(root, followlinks=False):
        directories[:] = sorted(name for name in directories if name != ".git")
        for name in sorted(names):
            if len(files) >= SNAPSHOT_FILES:
                return files
            path = os.path.join(folder, name)
            state = _file_state(path, budget)
            if state is not None:
                files[os.path.relpath(path, root)] = state
                budget -= len(state.data or b"")
    return files
