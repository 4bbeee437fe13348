"""Performing the tools inside the workspace (docs/loop.md#confinement, #replies).

Every path is reached from the root by descriptor, each folder opened ``O_NOFOLLOW`` relative to its parent:
reads resolve a link from its text here and must stay inside the root; writes refuse any symlink
component; walks never enter a link, even one swapped in mid-walk.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Generator
from contextlib import closing
from typing import Any, BinaryIO, NamedTuple

import msgspec

from metaharness.pure.budgets import TOOL_RUN_TIMEOUT_S
from metaharness.pure.jsonline import compact
from metaharness.pure.loop.paths import glob_matches
from metaharness.shell.loop.cancel import CancelToken, Interrupted

SKIPPED_DIRS = frozenset({".git", "node_modules", "target", ".venv", "__pycache__"})
SEARCH_FILE_CAP = 1 << 20
READ_FILE_CAP = 64 << 20
"""The largest file ``file_read`` and ``file_edit`` read: a sparse terabyte costs a tool nothing to make."""
WALK_DEPTH = 12
LINE_CUT = 400
DIR_ENTRIES = 500
STREAM_CAP = 64 * 1024
LINK_HOPS = 40
"""The links one path may pass through, the kernel's own bound: past it the path is a loop (``ELOOP``)."""
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_ENTRY = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
RUN_THROUGH = "B10X_HARNESS_RUN_THROUGH"
"""When set, the absolute path of the program every ``run`` call is started through, handed the
resolved program and its arguments (metaharness's tools' layer, docs/loop.md#tools)."""


class ToolFailure(Exception):
    """A tool could not do its job; the text is the model-facing result."""


class PathRefused(ToolFailure):
    """A filesystem confinement refusal (``path-refused``)."""


def symlink_text(path: str) -> str:
    """The text of a path that passes through a symbolic link."""
    return f"`{path}` passes through a symbolic link"


def not_regular(path: str) -> str:
    """The text of a path that is not a regular file."""
    return f"`{path}` is not a regular file"


class WalkEntry(NamedTuple):
    """One entry a walk reached: its path as the call names it, whether it is a directory, whether the depth
    bound stopped the walk there, and the open folder holding it with its name there (open until the walk
    resumes)."""

    path: str
    is_dir: bool
    bound: bool
    folder: int
    name: str


class Workspace:
    """The canonical root and the facts the tools need."""

    def __init__(self, root: str, hidden_env: tuple[str, ...], cancel: CancelToken) -> None:
        self.root = root
        self.hidden_env = hidden_env
        self.cancel = cancel

    def writable(self) -> bool:
        """Whether the process may write the root."""
        return os.access(self.root, os.W_OK)

    def _inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root.rstrip("/") + "/")

    def _located(self, path: str, relative: str) -> tuple[int, str]:
        """The open folder holding ``relative``'s last entry and that entry's name (``.`` for the folder
        itself), reached from the root by descriptor: each folder opened ``O_NOFOLLOW`` relative to the one
        before, a link met on the way resolved here from its text (``readlinkat``), ``..`` back to the folder
        held before it. Past the root, or an absolute link not under it, is outside the workspace."""
        held = [os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
        pending, hops, name = _parts(relative), 0, "."
        try:
            while pending:
                part, name = pending.pop(0), "."
                if part == "..":
                    if len(held) == 1:
                        raise PathRefused(f"`{path}` is outside the workspace")
                    os.close(held.pop())
                    continue
                step = _stepped(held[-1], part, last=not pending)
                if isinstance(step, int):
                    held.append(step)
                elif step is None:
                    name = part
                else:
                    hops += 1
                    if hops > LINK_HOPS:
                        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
                    if step.startswith("/"):
                        for fd in held[1:]:
                            os.close(fd)
                        del held[1:]
                    pending = self._link_parts(path, step) + pending
        except BaseException:
            for fd in held:
                os.close(fd)
            raise
        for fd in held[:-1]:
            os.close(fd)
        return held[-1], name

    def _link_parts(self, path: str, target: str) -> list[str]:
        """A link's text as the names to take after it: relative to its folder, or when absolute the names
        under the root (an absolute link anywhere else leads outside the workspace)."""
        if not target.startswith("/"):
            return _parts(target)
        given, root = _parts(target), _parts(self.root)
        if given[: len(root)] != root:
            raise PathRefused(f"`{path}` is outside the workspace")
        return given[len(root) :]

    def _opened(self, path: str, relative: str, flags: int = 0) -> int:
        """``relative``'s entry reached by :meth:`_located` and opened there without following (a link
        swapped in after it was resolved is refused) and without waiting (a FIFO is never waited on)."""
        folder, name = self._located(path, relative)
        try:
            return os.open(name, _ENTRY | flags, dir_fd=folder)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise PathRefused(symlink_text(path)) from None
            raise
        finally:
            os.close(folder)

    # reads

    def file_read(self, path: str, relative: str, arguments: dict[str, Any]) -> bytes:
        try:
            opened = self._opened(path, relative)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENXIO):
                raise PathRefused(not_regular(path)) from None
            raise
        if not stat.S_ISREG(os.fstat(opened).st_mode):
            os.close(opened)
            raise PathRefused(not_regular(path))
        with os.fdopen(opened, "rb") as handle:
            raw = _bounded_read(path, handle)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolFailure(f"`{path}` is not UTF-8 text") from None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        offset = arguments.get("offset", 1)
        limit = arguments.get("limit", 2000)
        max_bytes = arguments.get("max_bytes", 65536)
        out: list[str] = []
        size = 0
        last = offset - 1
        for number in range(offset, min(offset + limit, len(lines) + 1)):
            rendered = f"{number:>6}\t{lines[number - 1]}\n"
            if size + len(rendered.encode()) > max_bytes:
                break
            out.append(rendered)
            size += len(rendered.encode())
            last = number
        reply = {
            "path": path,
            "lines": {"first": offset, "last": last, "total": len(lines)},
            "truncated": last < len(lines),
            "text": "".join(out),
        }
        return compact(reply)

    def dir_list(self, path: str, relative: str, arguments: dict[str, Any]) -> bytes:
        try:
            directory = self._opened(path, relative, os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolFailure(f"`{path}` is not a directory") from None
        try:
            return self._listed(path, directory)
        finally:
            os.close(directory)

    def _listed(self, path: str, directory: int) -> bytes:
        """The listing of the open ``directory``, each entry's kind by ``lstat`` through it."""
        names = sorted(os.listdir(directory))
        entries: list[dict[str, Any]] = []
        for name in names[:DIR_ENTRIES]:
            info = os.lstat(name, dir_fd=directory)
            if stat.S_ISREG(info.st_mode):
                entries.append({"name": name, "kind": "file", "bytes": info.st_size})
            elif stat.S_ISDIR(info.st_mode):
                entries.append({"name": name, "kind": "directory"})
            elif stat.S_ISLNK(info.st_mode):
                entries.append({"name": name, "kind": "symlink"})
            else:
                entries.append({"name": name, "kind": "other"})
        return compact({"path": path, "entries": entries, "truncated": len(names) > DIR_ENTRIES})

    def _walk(self, path: str, relative: str, skip: bool) -> Generator[WalkEntry, None, None]:
        """The entries under ``relative`` (reached by :meth:`_located`; a regular file is its only entry)
        in code-point order, each folder opened ``O_NOFOLLOW`` in its parent's descriptor: never entering a
        link, even one swapped in mid-walk (docs/loop.md#confinement). Close it to release its descriptors."""
        folder, name = self._located(path, relative)
        try:
            if stat.S_ISREG(os.lstat(name, dir_fd=folder).st_mode):
                yield WalkEntry(relative, False, False, folder, name)
                return
            try:
                start = os.open(name, _FOLDER, dir_fd=folder)
            except NotADirectoryError:
                if stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode):
                    raise PathRefused(symlink_text(path)) from None
                raise
            try:
                yield from _walk_folder(start, relative, 0, skip)
            finally:
                os.close(start)
        finally:
            os.close(folder)

    def search(self, path: str, relative: str, arguments: dict[str, Any]) -> bytes:
        pattern = arguments["pattern"]
        regex: re.Pattern[str] | None = None
        if arguments.get("regex", False):
            try:
                regex = re.compile(pattern)
            except re.error as error:
                raise ToolFailure(f"`{pattern}` is not a valid regular expression: {error}") from None
        limit = arguments.get("max_results", 100)
        glob = arguments.get("glob")
        matches: list[dict[str, Any]] = []
        truncated = False
        bound = False
        with closing(self._walk(path, relative, skip=True)) as walked:
            for entry in walked:
                bound = bound or entry.bound
                if entry.is_dir or (glob is not None and not _glob_hit(glob, entry.path)):
                    continue
                lines = _searched_lines(entry)
                if lines is None:
                    continue
                for index, line in enumerate(lines):
                    hit = regex.search(line) is not None if regex is not None else pattern in line
                    if not hit:
                        continue
                    if len(matches) >= limit:
                        truncated = True
                        break
                    matches.append(_match(entry.path, lines, index, arguments.get("context", 0)))
                if truncated:
                    break
        return compact({"pattern": pattern, "matches": matches, "truncated": truncated, "depth_bound_reached": bound})

    def find(self, path: str, relative: str, arguments: dict[str, Any]) -> bytes:
        glob = arguments["glob"]
        limit = arguments.get("max_results", 200)
        paths: list[str] = []
        truncated = False
        bound = False
        with closing(self._walk(path, relative, skip=False)) as walked:
            for entry in walked:
                bound = bound or entry.bound
                if entry.bound or not _glob_hit(glob, entry.path):
                    continue
                if len(paths) >= limit:
                    truncated = True
                    break
                paths.append(entry.path + "/" if entry.is_dir else entry.path)
        return compact({"glob": glob, "paths": paths, "truncated": truncated, "depth_bound_reached": bound})

    # writes

    def _parent_fd(self, path: str, relative: str, create: bool) -> tuple[int, str]:
        """The parent directory opened without following any symlink, and the final name."""
        parts = relative.split("/")
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for part in parts[:-1]:
                try:
                    child = os.open(part, _FOLDER, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise ToolFailure(f"`{path}` does not exist") from None
                    os.mkdir(part, 0o755, dir_fd=fd)
                    child = os.open(part, _FOLDER, dir_fd=fd)
                except OSError as error:
                    if error.errno in (errno.ELOOP, errno.ENOTDIR):
                        kind = os.lstat(part, dir_fd=fd).st_mode
                        raise PathRefused(symlink_text(path) if stat.S_ISLNK(kind) else not_regular(path)) from None
                    raise
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd, parts[-1]

    def check_write_target(self, path: str, relative: str, must_exist: bool) -> None:
        """Gate 4 for writes: no symlink component, the target a regular file (or absent for a write), each
        folder reached from the root by descriptor as the write itself reaches it (:meth:`_parent_fd`)."""
        if relative == ".":
            raise PathRefused(not_regular(path))
        try:
            folder, name = self._parent_fd(path, relative, create=False)
        except PathRefused:
            raise
        except ToolFailure:
            if must_exist:
                raise
            return
        try:
            mode = os.lstat(name, dir_fd=folder).st_mode
        except FileNotFoundError:
            if must_exist:
                raise ToolFailure(f"`{path}` does not exist") from None
            return
        finally:
            os.close(folder)
        if stat.S_ISLNK(mode):
            raise PathRefused(symlink_text(path))
        if not stat.S_ISREG(mode):
            raise PathRefused(not_regular(path))

    def edit_count_problem(self, path: str, relative: str, old: str) -> str | None:
        """Gate 4 for ``file_edit``: ``old`` must occur exactly once in a UTF-8 file."""
        text = self._read_nofollow(path, relative)
        if not old:
            return f"`old` is empty; name the text in `{path}` to replace"
        count = text.count(old)
        if count == 0:
            return f"`old` does not occur in `{path}`"
        if count > 1:
            return f"`old` occurs {count} times in `{path}`; make it unique"
        return None

    def _read_nofollow(self, path: str, relative: str) -> str:
        fd, name = self._parent_fd(path, relative, create=False)
        try:
            try:
                handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
            except OSError as error:
                if error.errno == errno.ELOOP:
                    raise PathRefused(symlink_text(path)) from None
                if error.errno == errno.ENOENT:
                    raise ToolFailure(f"`{path}` does not exist") from None
                raise
            with os.fdopen(handle, "rb") as stream:
                if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                    raise PathRefused(not_regular(path))
                raw = _bounded_read(path, stream)
        finally:
            os.close(fd)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolFailure(f"`{path}` is not UTF-8 text") from None

    def _replace(self, path: str, relative: str, data: bytes) -> None:
        fd, name = self._parent_fd(path, relative, create=True)
        try:
            try:
                mode = os.lstat(name, dir_fd=fd).st_mode
                if stat.S_ISLNK(mode):
                    raise PathRefused(symlink_text(path))
                if not stat.S_ISREG(mode):
                    raise PathRefused(not_regular(path))
            except FileNotFoundError:
                pass
            temp = f".{name}.b10x-{os.getpid()}.tmp"
            handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd)
            try:
                with os.fdopen(handle, "wb") as stream:
                    stream.write(data)
                os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                os.unlink(temp, dir_fd=fd)
                raise
        finally:
            os.close(fd)

    def file_write(self, path: str, relative: str, arguments: dict[str, Any]) -> bytes:
        data = arguments["text"].encode("utf-8")
        self._replace(path, relative, data)
        return compact({"path": path, "bytes": len(data)})

    def file_edit(self, path: str, relative: str, arguments: dict[str, Any]) -> bytes:
        problem = self.edit_count_problem(path, relative, arguments["old"])
        if problem is not None:
            raise ToolFailure(problem)
        text = self._read_nofollow(path, relative).replace(arguments["old"], arguments["new"], 1)
        data = text.encode("utf-8")
        self._replace(path, relative, data)
        return compact({"path": path, "bytes": len(data)})

    # run

    def program_on_path(self, name: str) -> str | None:
        """``name`` looked up on ``PATH`` in its absolute folders outside the workspace only: a relative
        entry (``.``, an empty one) or one inside the root is a folder the tools can write, and a program
        found there is not the one allowed (docs/loop.md#tools)."""
        for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
            if not os.path.isabs(entry) or self._inside(os.path.realpath(entry)):
                continue
            found = shutil.which(name, path=entry)
            if found is not None and not self._inside(os.path.realpath(found)):
                return found
        return None

    def run(self, argv: list[str]) -> bytes:
        program = self.program_on_path(argv[0])
        if program is None:
            raise ToolFailure(f"`{argv[0]}` was not found on PATH")
        environment = {k: v for k, v in os.environ.items() if k not in self.hidden_env}
        remaining = self.cancel.remaining_s()
        timeout = TOOL_RUN_TIMEOUT_S if remaining is None else min(TOOL_RUN_TIMEOUT_S, remaining)
        through = os.environ.get(RUN_THROUGH)
        try:
            child = subprocess.Popen(
                [through, program, *argv[1:]] if through else argv,
                executable=through or program,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=environment,
                start_new_session=True,
            )
        except OSError as error:
            raise ToolFailure(f"`{argv[0]}` could not start: {error.strerror}") from None
        timed_out = False
        try:
            with self.cancel.blocking():
                out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(child)
            out, err = child.communicate()
        except Interrupted:
            _kill_group(child)
            child.communicate()
            raise ToolFailure("the run was cancelled while this call ran") from None
        truncated = len(out) > STREAM_CAP or len(err) > STREAM_CAP
        reply = {
            "argv": argv,
            "exit": child.returncode if child.returncode is not None and child.returncode >= 0 else None,
            "stdout": out[:STREAM_CAP].decode("utf-8", errors="replace"),
            "stderr": err[:STREAM_CAP].decode("utf-8", errors="replace"),
            "truncated": truncated,
            "timed_out": timed_out,
        }
        if timed_out:
            raise ToolFailure(msgspec.json.encode(reply).decode())
        return compact(reply)


def _bounded_read(path: str, handle: BinaryIO) -> bytes:
    """The file's bytes, refused past ``READ_FILE_CAP`` (its size, or what it grew to while read)."""
    too_large = ToolFailure(f"`{path}` is larger than the {READ_FILE_CAP} byte bound of a read")
    if os.fstat(handle.fileno()).st_size > READ_FILE_CAP:
        raise too_large
    raw = handle.read(READ_FILE_CAP + 1)
    if len(raw) > READ_FILE_CAP:
        raise too_large
    return raw


def _parts(path: str) -> list[str]:
    """The names of a ``/``-separated path, less empty ones and ``.``."""
    return [part for part in path.split("/") if part not in ("", ".")]


def _link_text(folder: int, name: str) -> str | None:
    """The text of the link ``name`` in ``folder``, or None when it is no link (or absent)."""
    try:
        return os.readlink(name, dir_fd=folder)
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise


def _stepped(folder: int, name: str, last: bool) -> int | str | None:
    """One step of a path from ``folder``: the text of ``name`` when it is a link; else, when ``name`` is the
    last name, None; else ``name`` opened as a folder without following (a file there is ``ENOTDIR``)."""
    if last:
        return _link_text(folder, name)
    try:
        return os.open(name, _FOLDER, dir_fd=folder)
    except OSError as error:
        if error.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        target = _link_text(folder, name)
        if target is None:
            raise
        return target


def _walk_folder(folder: int, current: str, depth: int, skip: bool) -> Generator[WalkEntry, None, None]:
    """The entries of the open ``folder`` (its path ``current``, at ``depth``), then each sub-folder's in
    turn, opened ``O_NOFOLLOW`` in ``folder``: one that turned into a link or a file, or went, since it was
    listed is skipped, never followed; past ``WALK_DEPTH`` a folder is reached, not entered."""
    with os.scandir(folder) as listing:
        entries = sorted(listing, key=lambda entry: entry.name)
    children: list[tuple[str, str]] = []
    for entry in entries:
        child = entry.name if current == "." else f"{current}/{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            if skip and entry.name in SKIPPED_DIRS:
                continue
            yield WalkEntry(child, True, False, folder, entry.name)
            if depth + 1 >= WALK_DEPTH:
                yield WalkEntry(child, True, True, folder, entry.name)
            else:
                children.append((entry.name, child))
        elif entry.is_file(follow_symlinks=False):
            yield WalkEntry(child, False, False, folder, entry.name)
    for name, child in children:
        try:
            sub = os.open(name, _FOLDER, dir_fd=folder)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                continue
            raise
        try:
            yield from _walk_folder(sub, child, depth + 1, skip)
        finally:
            os.close(sub)


def _searched_lines(entry: WalkEntry) -> list[str] | None:
    """The lines of the file ``entry`` names, opened ``O_NOFOLLOW`` in its folder and checked regular by
    ``fstat``; None when it is no longer a regular file there, is past ``SEARCH_FILE_CAP`` (by its size, or
    what it grew to while read) or is not UTF-8."""
    try:
        opened = os.open(entry.name, _ENTRY, dir_fd=entry.folder)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOENT, errno.ENXIO):
            return None
        raise
    info = os.fstat(opened)
    if not stat.S_ISREG(info.st_mode) or info.st_size > SEARCH_FILE_CAP:
        os.close(opened)
        return None
    with os.fdopen(opened, "rb") as handle:
        raw = handle.read(info.st_size + 1)
        if len(raw) > info.st_size:
            raw += handle.read(SEARCH_FILE_CAP + 1 - len(raw))
    try:
        return None if len(raw) > SEARCH_FILE_CAP else raw.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return None


def _match(path: str, lines: list[str], index: int, context: int) -> dict[str, Any]:
    """The reply's match for line ``index`` of ``path``, with ``context`` lines before and after."""
    line = lines[index]
    match: dict[str, Any] = {
        "path": path,
        "line": index + 1,
        "text": line[:LINE_CUT],
        "line_truncated": len(line) > LINE_CUT,
    }
    if context:
        match["before"] = [text[:LINE_CUT] for text in lines[max(index - context, 0) : index]]
        match["after"] = [text[:LINE_CUT] for text in lines[index + 1 : index + 1 + context]]
    return match


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, 9)
    except ProcessLookupError:
        pass


def _glob_hit(glob: str, relative: str) -> bool:
    """No ``/`` in the glob: match base names at any depth; else relative paths."""
    if "/" not in glob:
        return glob_matches(glob, relative.rsplit("/", 1)[-1])
    return glob_matches(glob, relative)
