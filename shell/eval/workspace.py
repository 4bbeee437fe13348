"""A governed run's workspace copy, which the child writes (docs/eval.md#the-copy-is-the-childs): its
baseline repository (committed once per task, unpacked for each run), its diff and the files its checks
read — none through anything the child wrote.

git runs with every configuration source off (no system or global file, no ``GIT_*`` of the caller's
environment, fsmonitor, hooks and attributes off) and starts no automatic maintenance behind a commit, and after the run only against a repository of the
driver's own outside the copy (``--git-dir``), so the copy's ``.git`` — its config, hooks, filters,
fsmonitor — is never read on the host. A checked file is opened one component at a time from the
copy's directory descriptor with ``O_NOFOLLOW`` and read only when it is a regular file."""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import subprocess
import tarfile
import tempfile
from pathlib import Path

from returns.result import Success

from metaharness.pure.bounds import CHECKED_FILE_LIMIT
from metaharness.pure.eval.checks import UnreadFile
from metaharness.pure.workspace_diff import diff_name
from metaharness.shell.child_tree import ChildDir

_GIT_SETTINGS = (
    "-c", "user.name=metaharness-eval", "-c", "user.email=metaharness-eval@localhost", "-c", "core.hooksPath=/dev/null",
    "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", "-c", "core.fsmonitor=false",
    "-c", "core.attributesFile=/dev/null", "-c", "core.excludesFile=/dev/null", "-c", "core.untrackedCache=false",
    "-c", "core.protectNTFS=false", "-c", "core.protectHFS=false", "-c", "maintenance.auto=false", "-c", "gc.auto=0",
)  # fmt: skip
_NO_ATTRIBUTES = b"* !text !eol !filter !ident !working-tree-encoding !diff !merge\n"
"""``info/attributes`` of the driver's repositories: it outranks every ``.gitattributes`` in the tree, so
no attribute the child wrote changes the bytes committed or diffed."""
_OWN_REPOSITORY = "baseline.git"
_SET_ASIDE = "set-aside"
_GIT_PATH_LIMIT = 4096
"""git reaches no path longer than ``PATH_MAX``: a ``.git`` deeper than that is never read by it."""


def _git_environment() -> dict[str, str]:
    """The caller's environment without any ``GIT_*`` name, with system and global config off."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    return {**kept, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0"}  # fmt: skip


def _git(git_dir: Path, copy: Path | None, *words: str, check: bool = True) -> bytes:
    """git on ``git_dir``, with the work tree ``copy`` (none: plumbing that reads only the repository)."""
    tree = () if copy is None else (f"--work-tree={copy}",)
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", *tree, *_GIT_SETTINGS, *words],
        stdin=subprocess.DEVNULL, capture_output=True, check=check, env=_git_environment(), cwd=git_dir.parent,
    )  # fmt: skip
    return done.stdout


def unpack(archive: bytes, into: Path) -> None:
    """A tar archive the driver made, unpacked into the new directory ``into`` (the ``data`` filter)."""
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as opened:
        opened.extractall(into, filter="data")


def directory_archive(root: Path) -> bytes:
    """The directory ``root`` as a tar archive."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(root, arcname=".")
    return buffer.getvalue()


def baseline_repository(tree: bytes, commit: str) -> bytes:
    """Made once per task on the driver: the workspace ``tree`` unpacked and committed once as ``commit`` in
    its own ``.git`` (so a run sees a tracked tree: ``--context`` names tracked files), its objects in one
    pack; that ``.git`` as a tar archive, which every run of the task unpacks (:func:`place_baseline`)."""
    with tempfile.TemporaryDirectory(prefix="metaharness-eval-baseline-") as scratch:
        copy = Path(scratch) / "workspace"
        unpack(tree, copy)
        git_dir = copy / ".git"
        _git(git_dir, copy, "init", "-q", "--template=")
        (git_dir / "info").mkdir()
        (git_dir / "info" / "attributes").write_bytes(_NO_ATTRIBUTES)
        _git(git_dir, copy, "add", "-A", "-f")
        _git(git_dir, copy, "commit", "-q", "--allow-empty", "-m", f"metaharness-eval: {commit}")
        _git(git_dir, copy, "repack", "-a", "-d", "-q")
        return directory_archive(git_dir)


def place_baseline(copy: Path, repository: bytes) -> Path:
    """Before the run: the task's baseline repository as the unpacked copy's ``.git``, and again beside the
    copy as the driver's own, which the diff is taken against; returns the driver's repository. The driver's
    has no index (its stat data named files that are gone), so the diff stages every file by content."""
    unpack(repository, copy / ".git")
    own = copy.parent / _OWN_REPOSITORY
    unpack(repository, own)
    (own / "index").unlink()
    return own


def _set_aside(copy: Path, held: Path) -> tuple[str, ...]:
    """What staging must not read, moved by ``renameat`` into the driver's new folder ``held`` outside the
    copy: every ``.git`` below the copy's top (a nested repository, a ``gitdir:`` file, a link, a FIFO: a
    FIFO there made git wait forever, a ``gitdir:`` file sent it to read refs anywhere on the host, a nested
    repository's commit hid the files under it) and every regular file over ``CHECKED_FILE_LIMIT`` (a sparse
    terabyte costs the child nothing and git hours to hash); returns those files' paths. Walked by
    descriptor, never through a link."""
    held.mkdir()
    hold = os.open(held, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    top = ChildDir.open(str(copy))
    frames: list[tuple[ChildDir, str, list[str]]] = [(top, "", list(top.names()))]
    moved, oversized = 0, []
    try:
        while frames:
            directory, prefix, names = frames[-1]
            if not names:
                frames.pop()
                directory.close()
                continue
            name = names.pop()
            mode, size = _shape(directory.status(name))
            if (name == ".git" and prefix) or (stat.S_ISREG(mode) and size > CHECKED_FILE_LIMIT):
                moved += 1
                with contextlib.suppress(OSError):
                    os.rename(name, str(moved), src_dir_fd=directory.fd, dst_dir_fd=hold)
                    oversized += [] if name == ".git" else [prefix + name]
            elif stat.S_ISDIR(mode) and len(prefix) + len(name) < _GIT_PATH_LIMIT:
                inner = directory.sub(name)
                if isinstance(inner, Success):
                    frames.append((inner.unwrap(), f"{prefix}{name}/", list(inner.unwrap().names())))
    finally:
        for directory, _, _ in frames:
            directory.close()
        os.close(hold)
    return tuple(sorted(oversized))


def _shape(found: os.stat_result | None) -> tuple[int, int]:
    return (0, 0) if found is None else (found.st_mode, found.st_size)


def _oversized_note(paths: tuple[str, ...]) -> bytes:
    """The lines before the first ``diff --git`` (which ``git apply`` reads as commentary) naming each file
    left out of the diff for its size, its path git-quoted (``diff_name``) so no line feed the child put in
    it starts a header or hunk of its own."""
    limit = CHECKED_FILE_LIMIT // (1024 * 1024)
    return b"".join(f"metaharness-eval: {diff_name('', path)} is larger than {limit} MiB and is not in this diff\n"
                    .encode("utf-8", "surrogateescape") for path in paths)  # fmt: skip


def workspace_diff(own: Path, copy: Path) -> bytes:
    """The copy's changes against the baseline, new files included, binary-safe: the work tree staged
    into the driver's own repository (``.git`` entries of the tree are never staged), written as a tree
    there and diffed against ``HEAD`` tree to tree with no work tree and ``--ignore-submodules=none`` (which
    also keeps git from reading the ``.gitmodules`` the child staged: a malformed one, or one naming a nested
    repository with an ``update`` command, made the diff fail and ``diff.patch`` come out empty). Every nested
    ``.git`` is set aside first, so its folder's files are staged as files, and every file over
    ``CHECKED_FILE_LIMIT``, which a line before the patch names (:func:`_set_aside`)."""
    oversized = _set_aside(copy, own.parent / _SET_ASIDE)
    _git(own, copy, "add", "-A", "-f", "--ignore-errors", check=False)
    staged = _git(own, None, "write-tree", check=False).strip().decode("ascii", "replace")
    return _oversized_note(oversized) + _git(
        own, None, "diff-tree", "-r", "-p", "--binary", "--no-color", "--no-ext-diff", "--no-textconv",
        "--ignore-submodules=none", "HEAD", staged, check=False,
    )  # fmt: skip


def _step(directory: int, name: str, last: bool) -> int | UnreadFile | None:
    """``name`` under ``directory`` opened without following a link: a descriptor, ``None`` when it is
    missing or of another type, an :class:`UnreadFile` when it is a link (or became one)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | (0 if last else os.O_DIRECTORY)
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as error:
        try:
            linked = stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
        except OSError:
            linked = False
        if linked or error.errno == errno.ELOOP:
            return UnreadFile("is a symbolic link, and metaharness-eval follows none")
        if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENXIO):
            return None
        return UnreadFile(f"could not be read: {error.strerror}")


def _read_checked(root: int, path: str) -> bytes | UnreadFile | None:
    parts = [part for part in path.split("/") if part not in ("", ".")]
    directory = os.dup(root)
    try:
        for number, part in enumerate(parts):
            opened = _step(directory, part, number == len(parts) - 1)
            if not isinstance(opened, int):
                if isinstance(opened, UnreadFile) and number < len(parts) - 1:
                    return UnreadFile(f"is reached through the symbolic link {'/'.join(parts[: number + 1])}, "
                                      "and metaharness-eval follows none")  # fmt: skip
                return opened
            os.close(directory)
            directory = opened
        found = os.fstat(directory)
        if not stat.S_ISREG(found.st_mode):
            return None
        if found.st_size > CHECKED_FILE_LIMIT:
            return UnreadFile(f"is larger than {CHECKED_FILE_LIMIT // (1024 * 1024)} MiB")
        with os.fdopen(os.dup(directory), "rb") as handle:
            return handle.read(CHECKED_FILE_LIMIT)
    finally:
        os.close(directory)


def checked_files(copy: Path, paths: tuple[str, ...]) -> dict[str, bytes | UnreadFile | None]:
    """Each checked path's bytes after the run, read from the copy's descriptor as a regular file."""
    root = os.open(copy, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        return {path: _read_checked(root, path) for path in paths}
    finally:
        os.close(root)
