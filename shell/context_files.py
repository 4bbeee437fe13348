"""Reading ``--context`` files beneath ``--cwd`` and git's index (docs/hermetic.md#context-files).

Each path is opened with directory handles: ``--cwd`` as a directory, every intermediate component
with ``O_NOFOLLOW | O_DIRECTORY`` relative to the previous handle, the last with ``O_NOFOLLOW``; the
handle is checked for a regular file and read once. A link swapped in at any component is never
followed. The decisions are :func:`metaharness.pure.context.admit_context_files`'.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence

from returns.result import Failure, Result

from metaharness.pure.bounds import GIT_INDEX_LIMIT, GIT_SMALL_FILE_LIMIT
from metaharness.pure.context import (
    MAX_CONTEXT_BYTES,
    ContextFileRead,
    ContextNotRegular,
    ContextOpening,
    ContextRead,
    ContextSymlink,
    ContextUnopened,
    GitIndexFacts,
    admit_context_files,
    context_components,
)
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import read_regular

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def load_context_files(cwd: str | None, paths: Sequence[str]) -> Result[tuple[ContextFileRead, ...], Refusal]:
    """Open, read and check every declared path (docs/hermetic.md#context-files, #context-refusals); the admitted files,
    in declaration order, carry exactly the bytes read and their sha256."""
    if cwd is None or not paths:
        return admit_context_files(cwd, paths, (), GitIndexFacts(prefix=None, index=None))
    openings: list[ContextOpening] = []
    for path in paths:
        components = context_components(path)
        openings.append(ContextUnopened() if isinstance(components, Failure) else open_beneath(cwd, components.unwrap()))
    return admit_context_files(cwd, paths, openings, gather_git_index(cwd))


def open_beneath(cwd: str, components: tuple[str, ...]) -> ContextOpening:
    """Open ``components`` beneath the directory ``cwd`` without following a link at any component,
    and read the regular file at the end once (docs/hermetic.md#context-files)."""
    try:
        handle = os.open(cwd, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        return ContextNotRegular(component=".", detail=f"--cwd {cwd} could not be opened ({error.strerror})")
    try:
        for depth, component in enumerate(components[:-1], start=1):
            shown = "/".join(components[:depth])
            try:
                inner = os.open(component, _DIRECTORY_FLAGS, dir_fd=handle)
            except OSError as error:
                return _classify(handle, component, shown, error)
            os.close(handle)
            handle = inner
        return _read_last(handle, components[-1], "/".join(components))
    finally:
        os.close(handle)


def _read_last(directory: int, name: str, shown: str) -> ContextOpening:
    try:
        status = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except OSError as error:
        return _classify(directory, name, shown, error)
    if stat.S_ISLNK(status.st_mode):
        return ContextSymlink(component=shown)
    if not stat.S_ISREG(status.st_mode):
        return ContextNotRegular(component=shown, detail=f"{shown} {_describe(status.st_mode)}")
    try:
        handle = os.open(name, _FILE_FLAGS, dir_fd=directory)
    except OSError as error:
        return _classify(directory, name, shown, error)
    try:
        opened = os.fstat(handle)
        if not stat.S_ISREG(opened.st_mode):
            return ContextNotRegular(component=shown, detail=f"{shown} {_describe(opened.st_mode)}")
        chunks: list[bytes] = []
        held = 0
        while held <= MAX_CONTEXT_BYTES and (chunk := os.read(handle, MAX_CONTEXT_BYTES + 1 - held)):
            chunks.append(chunk)
            held += len(chunk)
        return ContextRead(data=b"".join(chunks), more=held > MAX_CONTEXT_BYTES)
    finally:
        os.close(handle)


def _classify(directory: int, name: str, shown: str, error: OSError) -> ContextOpening:
    """Why an open beneath ``directory`` failed: a link is named, anything else is not a regular file."""
    try:
        status = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except OSError:
        return ContextNotRegular(component=shown, detail=f"{shown} does not exist")
    if stat.S_ISLNK(status.st_mode):
        return ContextSymlink(component=shown)
    if stat.S_ISDIR(status.st_mode):
        return ContextNotRegular(component=shown, detail=f"{shown} could not be opened ({error.strerror})")
    return ContextNotRegular(component=shown, detail=f"{shown} {_describe(status.st_mode)}, so the path does not exist")


def _describe(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "is a directory"),
        (stat.S_ISFIFO, "is a FIFO"),
        (stat.S_ISSOCK, "is a socket"),
        (stat.S_ISCHR, "is a character device"),
        (stat.S_ISBLK, "is a block device"),
        (stat.S_ISREG, "is a regular file, not a directory"),
    )
    return next((words for test, words in kinds if test(mode)), "is not a regular file")


def gather_git_index(cwd: str) -> GitIndexFacts:
    """Find the nearest of ``cwd`` and its ancestors holding ``.git`` (a directory, or a gitfile whose
    first line is ``gitdir: <path>``, relative to the file's directory) and read its ``index``
    (docs/hermetic.md#context-files). Nothing is fetched."""
    real = os.path.realpath(cwd)
    top = real
    while True:
        dotgit = os.path.join(top, ".git")
        if os.path.isdir(dotgit):
            return _index_facts(real, top, dotgit)
        if os.path.isfile(dotgit):
            return _index_facts(real, top, _gitfile_target(top, dotgit))
        parent = os.path.dirname(top)
        if parent == top:
            return GitIndexFacts(prefix=None, index=None)
        top = parent


def _gitfile_target(top: str, gitfile: str) -> str | None:
    try:
        first = read_regular(gitfile, GIT_SMALL_FILE_LIMIT).split(b"\n")[0].rstrip(b"\r")
    except OSError:
        return None
    if not first.startswith(b"gitdir:"):
        return None
    return os.path.join(top, first[len(b"gitdir:") :].decode("utf-8", "surrogateescape").strip())


def _index_facts(real: str, top: str, git_directory: str | None) -> GitIndexFacts:
    prefix = os.path.relpath(real, top)
    prefix = "" if prefix == "." else prefix
    if git_directory is None:
        return GitIndexFacts(prefix=prefix, index=None)
    try:
        index: bytes | None = read_regular(os.path.join(git_directory, "index"), GIT_INDEX_LIMIT)
    except OSError:
        index = None
    return GitIndexFacts(prefix=prefix, index=index, hash_size=_hash_size(git_directory))


def _hash_size(git_directory: str) -> int:
    """32 when the repository's ``extensions.objectformat`` is sha256, else 20 (a worktree's config is
    in its common directory)."""
    common = git_directory
    try:
        named = read_regular(os.path.join(git_directory, "commondir"), GIT_SMALL_FILE_LIMIT)
        common = os.path.join(git_directory, named.decode("utf-8", "surrogateescape").strip())
    except OSError:
        pass
    try:
        config = read_regular(os.path.join(common, "config"), GIT_SMALL_FILE_LIMIT).decode("utf-8", "replace")
    except OSError:
        return 20
    return 32 if re.search(r"^\s*objectformat\s*=\s*sha256\s*$", config, re.IGNORECASE | re.MULTILINE) else 20
