"""The metaharness side of the event-driven hook channel, kind-agnostic (docs/adapters/common.md#hook-channel).

:meth:`HookChannel.create` writes ``hooks/pretooluse`` (rendered by ``metaharness.pure.hook_channel``)
and makes ``hook-channel/requests/``, ``responses/`` and the ``doorbell`` FIFO before the spawn, then
holds the doorbell open for reading and for writing (so it never reads end-of-file) for the whole run.

The run loop puts :meth:`HookChannel.fileno` in its one readiness wait beside the record and its own
stdin: no polling interval. When it is readable, :meth:`ring` returns the keys rung since the last
call; :meth:`request` reads a call's request file; :meth:`answer` writes the response file by rename
and wakes that hook through its wake FIFO. No channel file is deleted during the run.
"""

from __future__ import annotations

import errno
import os

from metaharness.pure.bounds import HOOK_REQUEST_LIMIT
from metaharness.pure.hook_channel import (
    DOORBELL,
    HOOK_PROGRAM,
    REQUESTS_DIR,
    RESPONSES_DIR,
    doorbell_keys,
    is_channel_key,
)
from metaharness.shell.bounded_reads import open_regular


class HookChannel:
    """One run's hook channel under ``scratch``: the doorbell held open, keys read, answers written."""

    def __init__(self, scratch: str, read_fd: int, write_fd: int) -> None:
        self.scratch = scratch
        self.program = os.path.join(scratch, HOOK_PROGRAM)
        self._requests = os.path.join(scratch, REQUESTS_DIR)
        self._responses = os.path.join(scratch, RESPONSES_DIR)
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._pending = b""

    @classmethod
    def create(cls, scratch: str) -> HookChannel:
        """Make the channel directories (0700) and the doorbell FIFO (0600) under ``scratch`` and open
        the doorbell for reading and writing (docs/adapters/common.md#vendor-decisions)."""
        for directory in (REQUESTS_DIR, RESPONSES_DIR):
            os.makedirs(os.path.join(scratch, directory), mode=0o700, exist_ok=True)
        doorbell = os.path.join(scratch, DOORBELL)
        os.mkfifo(doorbell, 0o600)
        read_fd = os.open(doorbell, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        write_fd = os.open(doorbell, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        return cls(scratch, read_fd, write_fd)

    def fileno(self) -> int:
        """The doorbell's read end, for the run loop's readiness wait."""
        return self._read_fd

    def ring(self) -> tuple[str, ...]:
        """The keys rung since the last call, in doorbell order (reads without blocking)."""
        received = b""
        while True:
            try:
                chunk = os.read(self._read_fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            received += chunk
        keys, self._pending = doorbell_keys(self._pending, received)
        return tuple(key for key in keys if is_channel_key(key))

    def request(self, key: str) -> bytes | None:
        """The bytes of ``requests/<key>.json``, or ``None`` when it is missing or not a regular file (a
        ``COVERAGE_GAP``); past ``HOOK_REQUEST_LIMIT`` only that many bytes, which no reader parses."""
        try:
            with open_regular(os.path.join(self._requests, f"{key}.json")) as handle:
                return handle.read(HOOK_REQUEST_LIMIT + 1)[:HOOK_REQUEST_LIMIT]
        except OSError:
            return None

    def answer(self, key: str, body: bytes) -> bool:
        """Write ``body`` as ``responses/<key>.json`` (by rename from ``.writing.<key>``; zero bytes
        abstain) and wake the hook with one ``\\n`` (docs/adapters/common.md#vendor-decisions).

        Returns ``False`` when the wake FIFO has no reader: the hook's backstop already denied.
        """
        writing = os.path.join(self._responses, f".writing.{key}")
        descriptor = os.open(writing, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(body)
        os.rename(writing, os.path.join(self._responses, f"{key}.json"))
        try:
            wake = os.open(os.path.join(self._responses, f"{key}.wake"), os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:
            if error.errno in (errno.ENXIO, errno.ENOENT):
                return False
            raise
        try:
            os.write(wake, b"\n")
        except BrokenPipeError:
            return False
        finally:
            os.close(wake)
        return True

    def close(self) -> None:
        """Close both doorbell ends; the files stay for ``--retain-dir``."""
        for descriptor in (self._read_fd, self._write_fd):
            try:
                os.close(descriptor)
            except OSError:
                pass
