"""The standard streams as a console script finds them (docs/cli.md#closed-standard-streams).

A descriptor the caller closed (``metaharness … >&-``, ``<&-``, ``2>&-``) gets a stand-in before the
script opens anything, so no file, socket or pipe it opens later lands on 0, 1 or 2 and is read or
written as a standard stream: stdin and stderr become ``/dev/null``, and stdout the writing end of a
pipe nobody reads, so every write to it fails as a write to a reader that went away does (``EPIPE``)
and the verb ends as it does under ``… | head -1``: ``stdout-closed``, never a product written nowhere.
"""

from __future__ import annotations

import os
import sys


def stand_in_closed_streams() -> None:
    """Give each closed standard descriptor, in order 0, 1, 2, its stand-in and its Python stream."""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            _stand_in(descriptor)


def _stand_in(descriptor: int) -> None:
    if descriptor == 1:
        reading, writing = os.pipe()
        _place(writing, 1)
        if reading != 1:
            os.close(reading)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's stdout
        return
    _place(os.open(os.devnull, os.O_RDONLY if descriptor == 0 else os.O_WRONLY), descriptor)
    if descriptor == 0:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - the process's stdin
    else:
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115


def _place(opened: int, descriptor: int) -> None:
    """``opened`` moved onto ``descriptor`` (already there when it was the lowest free one)."""
    if opened != descriptor:
        os.dup2(opened, descriptor)
        os.close(opened)


def drop_stdout() -> None:
    """Point stdout at ``/dev/null`` once its reader is gone, so the interpreter's last flush does not fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
