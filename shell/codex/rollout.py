"""Tailing the codex rollout file (docs/adapters/codex.md#rollout-mapping).

The newest ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`` is looked for on every
poll until one exists, walking codex's home by descriptor (``metaharness.shell.child_tree``: no link is
followed, only a regular file with one name is read); from then on the file is held open and only
complete lines are read, and each is appended to the retained copy before it is handed on to be parsed.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import stat
from functools import partial

from returns.result import Failure, Result, Success

from metaharness.pure.bounds import RECORD_LINE_LIMIT
from metaharness.pure.codex.rollout import rollout_thread
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import LineCutter
from metaharness.shell.child_tree import ChildDir

QUIET_POLLS_AFTER_EXIT = 2
"""``codex app-server``'s rollout: reading stops two quiet polls after the server exits; ``codex exec``'s
is read to its end at once, its group killed (docs/adapters/codex.md#rollout-mapping)."""

READ_CHUNK = 1024 * 1024
"""Bytes read from the rollout at a time, each cut into lines before the next is read."""


def _numbered(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in names if name[:1].isdigit())


def rollout_files(home: ChildDir) -> dict[str, float]:
    """Every ``sessions/YYYY/MM/DD/rollout-*.jsonl`` under codex's ``home`` that is a regular file with
    one name, by its path below ``sessions/``, with its modification time; each folder is reached by
    descriptor, so a link on the way or at a rollout's name is never followed
    (docs/adapters/common.md#child-trees)."""
    found: dict[str, float] = {}
    folders: list[tuple[str, ChildDir]] = []
    sessions = home.sub("sessions")
    if isinstance(sessions, Success):
        folders.append(("", sessions.unwrap()))
    while folders:
        prefix, folder = folders.pop()
        try:
            depth = prefix.count("/")
            for name in folder.names() if depth == 3 else _numbered(folder.names()):
                if depth < 3:
                    inner = folder.sub(name)
                    if isinstance(inner, Success):
                        folders.append((f"{prefix}{name}/", inner.unwrap()))
                    continue
                status = folder.status(name)
                regular = status is not None and stat.S_ISREG(status.st_mode) and status.st_nlink == 1
                if regular and fnmatch.fnmatchcase(name, "rollout-*.jsonl") and status is not None:
                    found[prefix + name] = status.st_mtime
        finally:
            folder.close()
    return found


class RolloutTail:
    """The rollout of one run: found under codex's ``home`` (or the given ``found`` path below
    ``sessions/``), held open once found and read line by line, copied to the ``copy`` descriptor
    (made ``O_EXCL`` before the spawn; ``None`` keeps no copy)."""

    def __init__(self, home: ChildDir, copy: int | None, found: str | None = None) -> None:
        self.home = home
        self.path: str | None = None
        self._found = found
        self._fd: int | None = None
        self._cutter = LineCutter(RECORD_LINE_LIMIT)
        self._lines = 0
        self._copy = copy

    @classmethod
    def made(cls, home: ChildDir, scratch: ChildDir, copy_name: str) -> RolloutTail:
        """The main rollout's tail, its copy ``copy_name`` made new in the scratch root (raises ``OSError``
        before the spawn when it cannot be)."""
        copy = scratch.create(copy_name, append=True)
        if isinstance(copy, Failure):
            raise OSError(copy.failure().message)
        return cls(home, copy.unwrap())

    def _open(self) -> None:
        """Find the rollout (the newest, unless it was given) and hold it open; one that cannot be opened
        is looked for again at the next poll, a given one is given up."""
        found = self._found
        if found is None:
            rollouts = rollout_files(self.home)
            found = max(rollouts, key=lambda p: (rollouts[p], p)) if rollouts else None
        if found is None:
            return
        folder, name = posixpath.split(found)
        opened = self.home.reach(f"sessions/{folder}").bind(lambda d: _read_and_close(d, name))
        if isinstance(opened, Success):
            self.path = posixpath.join(self.home.where, "sessions", found)
            self._fd = opened.unwrap()
        elif self._found is not None:
            self._fd = -1

    def poll(self) -> tuple[tuple[int, bytes], ...]:
        """The complete lines written since the last poll, each with its 1-based line number,
        terminators removed; each is in the retained copy before this returns."""
        if self._fd is None:
            self._open()
        if self._fd is None or self._fd < 0:
            return ()
        lines: list[tuple[int, bytes]] = []
        kept = bytearray()
        for chunk in iter(partial(_read, self._fd), b""):
            for line in self._cutter.feed(chunk):
                raw = line.removesuffix(b"\n")
                kept += raw + b"\n"
                self._lines += 1
                lines.append((self._lines, raw.removesuffix(b"\r")))
        if kept and self._copy is not None:
            _write_all(self._copy, bytes(kept))
        return tuple(lines)

    def close(self) -> None:
        """Close the rollout and the retained copy."""
        for fd in (self._fd, self._copy):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._fd = self._copy = None


def _read_and_close(folder: ChildDir, name: str) -> Result[int, Refusal]:
    try:
        return folder.reader(name)
    finally:
        folder.close()


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, READ_CHUNK)
    except OSError:
        return b""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass


class SubAgentRollouts:
    """The rollouts a run's sub-agents write beside the main one (Codex 0.171.0 gives each spawned
    agent its own thread and file): once the main rollout is known, the one rollout whose name ends in
    the thread id of a sub-agent the record named is tailed like it and copied to ``<copies>/<its name>``
    in the scratch root, made new (``O_EXCL``; a name already there keeps no copy). A rollout-named
    file no record names is never read, nor is any of two or more that name the same thread when it is
    first named, nor one named after its thread's rollout was chosen (docs/adapters/codex.md#rollout-mapping)."""

    def __init__(self, home: ChildDir, scratch: ChildDir, copies: str) -> None:
        self.home = home
        self.scratch = scratch
        self.copies_name = copies
        self.copies: ChildDir | None = None
        self.tails: dict[str, RolloutTail] = {}
        self.threads: set[str] = set()

    def _copy(self, name: str) -> int | None:
        if self.copies is None:
            self.copies = self.scratch.make_dir(self.copies_name).value_or(None)
        return None if self.copies is None else self.copies.create(name, append=True).value_or(None)

    def poll(self, main: str | None, named: frozenset[str]) -> tuple[tuple[str, int, bytes], ...]:
        """Each named sub-agent's rollout's new complete lines as (its path, line number, line); ``named``
        holds the thread ids the records named so far."""
        if main is None:
            return ()
        sessions = posixpath.join(self.home.where, "sessions")
        waiting = named - self.threads
        candidates: dict[str, list[str]] = {}
        for found in rollout_files(self.home) if waiting else ():
            thread = rollout_thread(posixpath.basename(found))
            if thread in waiting and posixpath.join(sessions, found) != main:
                candidates.setdefault(thread, []).append(found)
        for thread, (found, *others) in candidates.items():
            self.threads.add(thread)
            if not others:
                self.tails[posixpath.join(sessions, found)] = RolloutTail(self.home, self._copy(posixpath.basename(found)), found)
        return tuple((path, number, raw) for path, tail in self.tails.items() for number, raw in tail.poll())

    def close(self) -> None:
        """Close every rollout, every retained copy and the copies' folder."""
        for tail in self.tails.values():
            tail.close()
        if self.copies is not None:
            self.copies.close()
