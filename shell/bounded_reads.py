"""Reading inputs with a bound applied before the bytes are held (``metaharness.pure.bounds``): a line
longer than the bound yields its first ``limit`` bytes and the rest of it is read and dropped, so no
line costs more memory than its bound and no reader is slower than linear in what it reads; a file is
opened without blocking and read only when it is a regular file, and never past its bound."""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from typing import IO

_CHUNK = 65536


def bounded_lines(stream: IO[bytes], limit: int) -> Iterator[bytes]:
    """Each line of ``stream`` (its ``\\n`` kept), cut to ``limit`` bytes; a line cut short has no ``\\n``."""
    while True:
        line = stream.readline(limit)
        if not line:
            return
        if len(line) == limit and not line.endswith(b"\n"):
            while True:
                rest = stream.readline(_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
        yield line


class LineCutter:
    """Cuts a stream fed in chunks into lines (their ``\\n`` kept), each cut to ``limit`` bytes; the
    bytes held never exceed ``limit`` and each byte fed is looked at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.pending = bytearray()
        self.skipping = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines ``chunk`` completes, and the first ``limit`` bytes of a line it makes too long."""
        lines: list[bytes] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if not self.skipping:
                self.pending += chunk[start : end + 1]
                lines.append(bytes(self.pending[: self.limit]))
            self.pending.clear()
            self.skipping = False
            start = end + 1
        if not self.skipping:
            self.pending += chunk[start:]
            if len(self.pending) > self.limit:
                lines.append(bytes(self.pending[: self.limit]))
                self.pending.clear()
                self.skipping = True
        return lines

    def rest(self) -> bytes:
        """What is left at end of file: an unterminated last line (``b""`` when there is none)."""
        rest = b"" if self.skipping else bytes(self.pending)
        self.pending.clear()
        return rest


def descriptor_lines(fd: int, limit: int) -> Iterator[bytes]:
    """Each line read from the raw descriptor ``fd`` (its ``\\n`` kept), cut to ``limit`` bytes like
    :func:`bounded_lines`; a read error ends the lines as end of file does."""
    cutter = LineCutter(limit)
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            break
        yield from cutter.feed(chunk)
    rest = cutter.rest()
    if rest:
        yield rest


def open_regular(path: str) -> io.BufferedReader:
    """``path`` opened for reading without blocking on the open (a FIFO never waits for a writer) and
    refused with ``OSError`` unless it is a regular file (a FIFO or a device is never read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class InputTooLarge(OSError):
    """A file past the bound its reader applies; nothing past the bound was read."""


def read_bounded(handle: IO[bytes], limit: int) -> bytes:
    """What ``handle`` holds to its end, at most ``limit`` bytes: more raises :class:`InputTooLarge`
    with no more than ``limit + 1`` bytes ever held."""
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputTooLarge(f"larger than {limit} bytes")
    return data


def read_regular(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`), at most ``limit`` of them."""
    with open_regular(path) as handle:
        return read_bounded(handle, limit)
