"""A Unix socket's address that fits the kernel's ``sun_path`` (108 bytes with its NUL): a path under a
deep ``TMPDIR`` (the route socket ``<scratch>/route.sock``) is named through an ``O_PATH`` descriptor of
its directory, ``/proc/self/fd/N/NAME``, which binds and connects the same file."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

SUN_PATH_BYTES = 107
"""The longest path ``sun_path`` holds (its 108 bytes less the terminating NUL)."""


@contextlib.contextmanager
def unix_address(path: str) -> Iterator[str]:
    """``path`` itself when it fits ``sun_path``, else the same file through its directory's descriptor,
    open while the ``with`` block binds or connects."""
    if len(os.fsencode(path)) <= SUN_PATH_BYTES:
        yield path
        return
    directory = os.open(os.path.dirname(path) or ".", os.O_PATH | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{directory}/{os.path.basename(path)}"
    finally:
        os.close(directory)
