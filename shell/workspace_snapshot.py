"""The run's working directory read for its ``--retain-dir`` diff (``metaharness.pure.workspace_diff``):
every regular file below it with one name, walked through directory descriptors by
``metaharness.shell.child_tree`` (``O_NOFOLLOW``, checked regular on its descriptor), so a link, FIFO,
device or hard link the child planted is skipped, never read through. ``.git`` directories are not
walked. At most :data:`SNAPSHOT_FILES` files, and at most :data:`SNAPSHOT_BYTES` of their bytes are kept
(past that a file is compared by digest only). A file past ``FILE_TEXT_LIMIT`` is digested over its data
only (``SEEK_DATA``/``SEEK_HOLE``, each extent with its place, then the size), so a file the child extended
to a terabyte with one ``truncate`` costs the wind-up no time."""

from __future__ import annotations

import errno
import os

from metaharness.pure.workspace_diff import FILE_TEXT_LIMIT, FileState
from metaharness.shell.child_tree import ChildDir

SNAPSHOT_FILES = 20000
SNAPSHOT_BYTES = 64 * 1024 * 1024


def _extents_digest(fd: int, size: int) -> str:
    """The SHA-256 over each data extent's place and bytes, then the size: holes are never read."""
    import hashlib

    digest, offset = hashlib.sha256(), 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
            break
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        digest.update(b"%d:" % start)
        while start < end and (chunk := os.pread(fd, min(1 << 16, end - start), start)):
            digest.update(chunk)
            start += len(chunk)
        offset = max(end, offset + 1)
    digest.update(b"size %d" % size)
    return digest.hexdigest()


def _file_state(fd: int, budget: int) -> FileState:
    """A file's digest, and its bytes while within ``FILE_TEXT_LIMIT`` and ``budget``; ``hashlib`` is loaded here, by
    ``--retain-dir``'s snapshot, so a run without it loads none of it."""
    import hashlib

    size = os.fstat(fd).st_size
    if size > FILE_TEXT_LIMIT:
        try:
            return FileState(_extents_digest(fd, size), None)
        finally:
            os.close(fd)
    with os.fdopen(fd, "rb") as handle:
        digest, kept, size = hashlib.sha256(), bytearray(), 0
        while chunk := handle.read(1 << 16):
            digest.update(chunk)
            size += len(chunk)
            if size <= min(FILE_TEXT_LIMIT, budget):
                kept += chunk
    return FileState(digest.hexdigest(), bytes(kept) if size <= min(FILE_TEXT_LIMIT, budget) else None)


def snapshot(root: str) -> dict[str, FileState]:
    """Each regular file below ``root`` by its path relative to it (``metaharness.shell.child_tree``'s walk)."""
    files: dict[str, FileState] = {}
    budget = SNAPSHOT_BYTES
    try:
        tree = ChildDir.open(root)
    except OSError:
        return files
    try:
        walk = tree.regular_files(skipped=frozenset({".git"}))
        for path, fd in walk:
            if len(files) >= SNAPSHOT_FILES:
                os.close(fd)
                walk.close()
                break
            state = _file_state(fd, budget)
            files[path] = state
            budget -= len(state.data or b"")
    finally:
        tree.close()
    return files
