"""A file the operator names for metaharness to write after a run (``project --out``/``--html``, ``replay
--answers``): it may lie in a tree a child wrote (a work tree, a retained copy), so it is opened without
following a link at its name and without blocking on a FIFO, and emptied and written only once ``fstat``
finds a regular file (docs/adapters/common.md#child-trees). A link planted there never turns the write onto
the file it names. The one exception is a name directly in ``/dev`` or ``/dev/fd`` (``/dev/stdout``,
``/dev/null``, ``/dev/fd/3``): those directories are the system's, no tool writes them, and what they name is
the operator's own stream, written as it is (a regular file behind one is emptied first)."""

from __future__ import annotations

import errno
import io
import os
import stat

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_SYSTEM_STREAMS = frozenset({"/dev", "/dev/fd"})
"""The directories whose names are followed: the system's, which name the operator's own streams."""


def open_output(path: str) -> io.BufferedWriter:
    """``path`` created or emptied for writing, as ``open(path, "wb")`` would, or ``OSError`` naming why not:
    it is a symbolic link, or exists and is no regular file (a FIFO, a device, a directory)."""
    system = os.path.dirname(os.path.abspath(path)) in _SYSTEM_STREAMS
    try:
        fd = os.open(path, _FLAGS & ~os.O_NOFOLLOW if system else _FLAGS, 0o666)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "it is a symbolic link, which metaharness never writes through") from None
        if error.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "it is not a regular file") from None  # a FIFO no one reads
        raise
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        if not regular and not system:
            raise OSError(errno.EINVAL, "it is not a regular file")
        if regular:
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise
