"""The metaharness side of the event-driven hook channel, kind-agnostic (docs/adapters/common.md#hook-channel).

:meth:`HookChannel.create` makes ``hook-channel/ready/`` with ``READY_SLOTS`` wake FIFOs, ``requests/``,
``responses/`` and the ``doorbell`` FIFO before the spawn (the kind's launch writes ``hooks/pretooluse``,
rendered by ``metaharness.pure.hook_channel``), then holds the doorbell open for reading and for writing
(so it never reads end-of-file) for the whole run.

The run loop puts :meth:`HookChannel.fileno` in its one readiness wait beside the record and its own
stdin: no polling interval. When it is readable, :meth:`ring` returns the keys rung since the last
call and makes a new wake FIFO for each key it had made; :meth:`request` reads a call's request file;
:meth:`answer` writes the response file by rename, wakes that hook through ``ready/<key>.wake`` and
removes that FIFO's name (so ``ready/`` stays as small as the hooks waiting). No other channel file is
deleted during the run but the answer name of a refused answer (docs/adapters/common.md#child-trees).
"""

from __future__ import annotations

import os
from typing import TypeVar

from returns.result import Failure, Result, Success

from metaharness.pure.bounds import HOOK_REQUEST_LIMIT
from metaharness.pure.hook_channel import (
    CHANNEL_DIR,
    HOOK_PROGRAM,
    READY_SLOTS,
    doorbell_keys,
    is_channel_key,
)
from metaharness.pure.refusal import Refusal
from metaharness.shell.child_tree import ChildDir

T = TypeVar("T")

DOORBELL_CHUNK = 65536
DOORBELL_READS = 16
"""Reads of at most ``DOORBELL_CHUNK`` bytes one :meth:`HookChannel.ring` makes (1 MiB)."""
_DOORBELL_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_DOORBELL_WRITE = os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


class HookChannel:
    """One run's hook channel under ``scratch``: the doorbell held open, keys read, answers written,
    ``requests/`` and ``responses/`` held by the descriptors opened before the spawn
    (``metaharness.shell.child_tree``)."""

    def __init__(
        self, scratch: str, dirs: tuple[ChildDir, ChildDir, ChildDir], read_fd: int, write_fd: int
    ) -> None:
        self.scratch = scratch
        self.program = os.path.join(scratch, HOOK_PROGRAM)
        self._ready, self._requests, self._responses = dirs
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._pending = b""
        self._slots: set[str] = set()
        """The keys of the wake FIFOs made in ``ready/`` and not rung yet."""

    @classmethod
    def create(cls, scratch: str) -> HookChannel:
        """Make the channel directories (0700), the doorbell FIFO (0600) and ``READY_SLOTS`` wake FIFOs (0600)
        under ``scratch``, hold the three directories by descriptor and open the doorbell for reading and
        writing (docs/adapters/common.md#vendor-decisions). Before the spawn: a failure raises ``OSError``."""
        root = ChildDir.open(scratch)
        try:
            channel = _made(root.make_dir(CHANNEL_DIR))
        finally:
            root.close()
        try:
            dirs = tuple(_made(channel.make_dir(name)) for name in ("ready", "requests", "responses"))
            _made(channel.make_fifo("doorbell"))
            read_fd = os.open("doorbell", _DOORBELL_READ, dir_fd=channel.fd)
            write_fd = os.open("doorbell", _DOORBELL_WRITE, dir_fd=channel.fd)
        finally:
            channel.close()
        made = cls(scratch, (dirs[0], dirs[1], dirs[2]), read_fd, write_fd)
        for _ in range(READY_SLOTS):
            _made(made._new_slot())
        return made

    def _new_slot(self) -> Result[None, Refusal]:
        """One more wake FIFO ``ready/<key>.wake`` with a fresh random key."""
        key = os.urandom(8).hex()
        made = self._ready.make_fifo(f"{key}.wake")
        if isinstance(made, Success):
            self._slots.add(key)
        return made

    def fileno(self) -> int:
        """The doorbell's read end, for the run loop's readiness wait."""
        return self._read_fd

    def ring(self) -> tuple[str, ...]:
        """The keys rung since the last call, in doorbell order (reads without blocking, at most
        ``DOORBELL_READS`` reads a call, each cut into keys before the next: a child flooding the
        doorbell holds neither memory nor the run loop; the loop comes back while it is readable)."""
        keys: list[str] = []
        for _ in range(DOORBELL_READS):
            try:
                chunk = os.read(self._read_fd, DOORBELL_CHUNK)
            except OSError:
                break
            if not chunk:
                break
            rung, self._pending = doorbell_keys(self._pending, chunk)
            keys += rung
        for key in keys:
            if key in self._slots:
                self._slots.discard(key)
                self._new_slot()
        return tuple(key for key in keys if is_channel_key(key))

    def request(self, key: str) -> bytes | None:
        """The bytes of ``requests/<key>.json``, or ``None`` when it is missing or not a regular file with
        one name (a ``COVERAGE_GAP``); past ``HOOK_REQUEST_LIMIT`` only that many bytes, which no reader parses."""
        read = self._requests.read(f"{key}.json", HOOK_REQUEST_LIMIT + 1)
        return read.unwrap()[:HOOK_REQUEST_LIMIT] if isinstance(read, Success) else None

    def answer(self, key: str, body: bytes) -> Result[bool, Refusal]:
        """Write ``body`` as ``responses/<key>.json`` (a new ``.writing.<key>`` renamed there; zero bytes
        abstain), wake the hook with one ``\\n`` through the FIFO ``ready/<key>.wake`` and remove its name
        (docs/adapters/common.md#vendor-decisions).

        ``Success(False)`` when the wake FIFO has no reader: the hook's backstop already denied. A
        name of the wrong type on the way is the refusal ``name-refused``: whatever then sits at
        ``<key>.json`` is removed (``unlinkat``) and the hook is still woken, so it finds no answer and
        denies the call by itself (docs/adapters/common.md#child-trees).
        """
        writing, answer = f".writing.{key}", f"{key}.json"
        written = self._responses.write_new(writing, body).bind(
            lambda made: self._responses.rename(writing, answer, made)
        )
        wake = f"{key}.wake"
        if isinstance(written, Failure):
            self._responses.unlink(answer)
            self._woken(wake)
            return written
        woken = self._woken(wake)
        if isinstance(woken, Failure):
            self._responses.unlink(answer)
        return woken

    def _woken(self, wake: str) -> Result[bool, Refusal]:
        """Wake ``ready/<wake>``; a FIFO (or nothing) there is then unlinked, a name of another type is left."""
        woken = self._ready.wake(wake)
        if isinstance(woken, Success):
            self._ready.unlink(wake)
        return woken

    def close(self) -> None:
        """Close both doorbell ends and the directories; the files stay for ``--retain-dir``."""
        for descriptor in (self._read_fd, self._write_fd):
            try:
                os.close(descriptor)
            except OSError:
                pass
        for directory in (self._ready, self._requests, self._responses):
            directory.close()


def _made(made: Result[T, Refusal]) -> T:
    """What a step before the spawn made; a refusal there is an ``OSError`` of the setup, as any
    other failure there is."""
    if isinstance(made, Failure):
        raise OSError(made.failure().message)
    return made.unwrap()
