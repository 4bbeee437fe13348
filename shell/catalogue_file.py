"""Reading a catalogue file, and writing and reading back its scratch copy (docs/hermetic.md#catalogue-refusals,
#catalogue-scratch-copy).

The file is followed if a symbolic link, must be a regular file of at most 4 MiB, and is read once;
every decision on its bytes is ``metaharness.pure.catalogue``'s.
"""

from __future__ import annotations

import os
import stat

from returns.result import Failure, Result, Success

from metaharness.pure.catalogue import (
    CATALOGUE_CAP,
    Catalogue,
    check_copy_read_back,
    load_catalogue,
    scratch_copy,
)
from metaharness.pure.refusal import Refusal


def _unreadable(path: str, why: str) -> Failure[Refusal]:
    return Failure(Refusal("catalogue-unreadable", f"{path} {why}"))


def read_catalogue_bytes(path: str) -> Result[bytes, Refusal]:
    """The file's bytes, or ``catalogue-unreadable``: not a regular file (after following a
    symbolic link), not readable, or past 4 MiB (4,194,304 bytes)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        return _unreadable(path, f"cannot be read: {error.strerror or error}")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _unreadable(path, "is not a regular file")
        if info.st_size > CATALOGUE_CAP:
            return _unreadable(path, f"is {info.st_size} bytes, past 4 MiB ({CATALOGUE_CAP} bytes)")
        chunks: list[bytes] = []
        size = 0
        while size <= CATALOGUE_CAP:
            chunk = os.read(fd, CATALOGUE_CAP + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        return _unreadable(path, f"cannot be read: {error.strerror or error}")
    finally:
        os.close(fd)
    if size > CATALOGUE_CAP:
        return _unreadable(path, f"is past 4 MiB ({CATALOGUE_CAP} bytes)")
    return Success(b"".join(chunks))


def read_catalogue(path: str) -> Result[Catalogue, Refusal]:
    """The checked catalogue of the file at ``path``, or the first file refusal of docs/hermetic.md#catalogue-refusals
    (``catalogue-unreadable``, ``catalogue-not-tool-contract``, ``catalogue-malformed``)."""
    return read_catalogue_bytes(path).bind(lambda data: load_catalogue(data, path))


def write_scratch_copy(catalogue: Catalogue, path: str) -> None:
    """Write the scratch copy (docs/hermetic.md#catalogue-scratch-copy) to ``path``, mode 0600, replacing nothing."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as stream:
        stream.write(scratch_copy(catalogue))


def read_back_scratch_copy(path: str, catalogue: Catalogue, source: str, happened: str) -> Result[None, Refusal]:
    """Stage 9 (d): the written copy, read back, must be the checked catalogue, else
    ``catalogue-copy-differs`` naming ``source`` and what ``happened`` by then (docs/hermetic.md#catalogue-refusals)."""
    read = read_catalogue_bytes(path)
    if isinstance(read, Failure):
        return Failure(
            Refusal(
                "catalogue-copy-differs",
                f"the scratch copy of {source} cannot be read back ({read.failure().message}); by then {happened}; "
                "no vendor session was started",
            )
        )
    return check_copy_read_back(read.unwrap(), catalogue, source, happened)
