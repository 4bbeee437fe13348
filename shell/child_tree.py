"""Host-side operations on a tree the child can write, through directory descriptors
(docs/adapters/common.md#child-trees).

A :class:`ChildDir` is a directory held by its descriptor, opened before the spawn (or reached from
one by single names, never by a path). Every operation takes one name, never follows a link
(``O_NOFOLLOW``; a directory reached ``O_DIRECTORY | O_NOFOLLOW``), creates only ``O_CREAT | O_EXCL``,
renames with ``renameat``, removes with ``unlinkat`` and checks what it opened by ``fstat``: a regular file with one name where a
file is read, a FIFO where the wake FIFO is written. A name of the wrong type, or any ``OSError``, is
the refusal ``name-refused`` of that one operation, a value and never an exception.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Generator
from functools import partial

from returns.result import Failure, Result, Success

from metaharness.pure.refusal import Refusal

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND = _CREATE | os.O_APPEND
_WAKE = os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


def shape(mode: int) -> str:
    """What a name is, in the words a refusal uses."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a socket or device"


def _stepped(directory: ChildDir, name: str) -> Result[ChildDir, Refusal]:
    """The directory ``name`` in ``directory``, which is closed."""
    try:
        return directory.sub(name)
    finally:
        directory.close()


def _rung(fifo: int) -> Result[bool, Refusal]:
    """Write the wake line to an open FIFO and close it; ``False`` when its reader has gone."""
    try:
        os.write(fifo, b"\n")
    except OSError:
        return Success(False)
    finally:
        os.close(fifo)
    return Success(True)


def _mode(status: os.stat_result | None) -> int:
    return status.st_mode if status is not None else 0


def _single(name: str) -> bool:
    return bool(name) and "/" not in name and "\x00" not in name and name not in {".", ".."}


class ChildDir:
    """One directory of a child-writable tree, held by its descriptor; ``where`` names it in messages."""

    def __init__(self, fd: int, where: str) -> None:
        self.fd = fd
        self.where = where

    @classmethod
    def open(cls, path: str) -> ChildDir:
        """The directory at ``path``, opened without following a link at its last name; called before
        the spawn, on a path metaharness made (raises ``OSError``)."""
        return cls(os.open(path, _DIRECTORY), path)

    def refused(self, name: str, why: str) -> Failure[Refusal]:
        return Failure(Refusal("name-refused", f"{self.where}/{name} {why}"))

    def _failed(self, name: str, error: OSError) -> Failure[Refusal]:
        linked = error.errno == errno.ENOTDIR and stat.S_ISLNK(_mode(self.status(name)))  # O_DIRECTORY at a link
        if error.errno == errno.ELOOP or linked:
            return self.refused(name, "is a symbolic link, which metaharness never follows")
        if error.errno == errno.EEXIST:
            status = self.status(name)
            already = shape(status.st_mode) if status is not None else "a name"
            return self.refused(name, f"is already there ({already}), so metaharness does not write through it")
        return self.refused(name, f"could not be used: {error.strerror or error}")

    def _open(self, name: str, flags: int, mode: int = 0o600) -> Result[int, Refusal]:
        if not _single(name):
            return self.refused(name, "is not a single name")
        try:
            return Success(os.open(name, flags, mode, dir_fd=self.fd))
        except OSError as error:
            return self._failed(name, error)

    def _checked(self, name: str, fd: int, wanted: int) -> Result[int, Refusal]:
        """``fd`` when ``fstat`` finds the type ``wanted`` (a regular file with one name, a FIFO), else closed."""
        status = os.fstat(fd)
        if stat.S_IFMT(status.st_mode) == wanted and (wanted != stat.S_IFREG or status.st_nlink == 1):
            return Success(fd)
        os.close(fd)
        if stat.S_IFMT(status.st_mode) == wanted:
            return self.refused(name, "has another name (a hard link), so it may not be the file it names")
        return self.refused(name, f"is {shape(status.st_mode)}, not {shape(wanted)}")

    def sub(self, name: str) -> Result[ChildDir, Refusal]:
        """The directory ``name`` in this one, held by its own descriptor (a link is refused)."""
        return self._open(name, _DIRECTORY).map(lambda fd: ChildDir(fd, f"{self.where}/{name}"))

    def make_dir(self, name: str, mode: int = 0o700) -> Result[ChildDir, Refusal]:
        """The directory ``name``, made when missing."""
        try:
            os.mkdir(name, mode, dir_fd=self.fd)
        except FileExistsError:
            pass
        except OSError as error:
            return self._failed(name, error)
        return self.sub(name)

    def reader(self, name: str) -> Result[int, Refusal]:
        """A blocking descriptor on the regular file ``name`` (one name only), for reading."""
        opened = self._open(name, _READ).bind(lambda fd: self._checked(name, fd, stat.S_IFREG))
        if isinstance(opened, Success):
            os.set_blocking(opened.unwrap(), True)
        return opened

    def read(self, name: str, limit: int) -> Result[bytes, Refusal]:
        """The first ``limit`` bytes of the regular file ``name``."""

        def first(fd: int) -> Result[bytes, Refusal]:
            try:
                with os.fdopen(fd, "rb") as handle:
                    return Success(handle.read(limit))
            except OSError as error:
                return self._failed(name, error)

        return self.reader(name).bind(first)

    def create(self, name: str, mode: int = 0o600, *, append: bool = False) -> Result[int, Refusal]:
        """A new file ``name`` (``O_EXCL``: anything already there, a link among them, is refused)."""
        return self._open(name, _APPEND if append else _CREATE, mode)

    def write_new(self, name: str, data: bytes, mode: int = 0o600) -> Result[os.stat_result, Refusal]:
        """``data`` as the new file ``name`` (``mode``, 0600 unless named); the file's status, for
        :meth:`rename`'s check."""

        def written(fd: int) -> Result[os.stat_result, Refusal]:
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    return Success(os.fstat(handle.fileno()))
            except OSError as error:
                return self._failed(name, error)

        return self.create(name, mode).bind(written)

    def rename(self, old: str, new: str, made: os.stat_result) -> Result[None, Refusal]:
        """``renameat`` ``old`` to ``new`` in this directory, then check that ``new`` is the file
        metaharness made (``made``): a name swapped in between is refused."""
        if not (_single(old) and _single(new)):
            return self.refused(new, "is not a single name")
        try:
            os.rename(old, new, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            status = os.stat(new, dir_fd=self.fd, follow_symlinks=False)
        except OSError as error:
            return self._failed(new, error)
        if (status.st_dev, status.st_ino) != (made.st_dev, made.st_ino):
            return self.refused(new, "was swapped for another name between its writing and its rename")
        return Success(None)

    def wake(self, name: str) -> Result[bool, Refusal]:
        """One ``\\n`` written to the FIFO ``name`` without blocking; ``False`` when it is missing or has
        no reader (nobody waits on it), a refusal when it is anything but a FIFO."""
        if not _single(name):
            return self.refused(name, "is not a single name")
        try:
            fd = os.open(name, _WAKE, dir_fd=self.fd)
        except OSError as error:
            return Success(False) if error.errno in (errno.ENXIO, errno.ENOENT) else self._failed(name, error)
        return self._checked(name, fd, stat.S_IFIFO).bind(_rung)

    def unlink(self, name: str) -> Result[None, Refusal]:
        """Remove the name ``name`` itself (``unlinkat``: a link is removed, never what it points at; a
        directory is refused)."""
        if not _single(name):
            return self.refused(name, "is not a single name")
        try:
            os.unlink(name, dir_fd=self.fd)
        except OSError as error:
            return self._failed(name, error)
        return Success(None)

    def make_fifo(self, name: str, mode: int = 0o600) -> Result[None, Refusal]:
        """A new FIFO ``name``."""
        try:
            os.mkfifo(name, mode, dir_fd=self.fd)
        except OSError as error:
            return self._failed(name, error)
        return Success(None)

    def names(self) -> tuple[str, ...]:
        """The names in this directory, sorted (none when it cannot be listed)."""
        try:
            return tuple(sorted(os.listdir(self.fd)))
        except OSError:
            return ()

    def status(self, name: str) -> os.stat_result | None:
        """The status of ``name`` itself (a link is not followed), ``None`` when it is missing."""
        if not _single(name):
            return None
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return None

    def link_target(self, name: str) -> str | None:
        """The target of the symbolic link ``name`` itself (``readlinkat``), ``None`` when ``name`` is no
        link or is missing; nothing is opened, so a FIFO or device there costs nothing."""
        if not stat.S_ISLNK(_mode(self.status(name))):
            return None
        try:
            return os.readlink(name, dir_fd=self.fd)
        except OSError:
            return None

    def reach(self, relative: str) -> Result[ChildDir, Refusal]:
        """The directory at the relative path ``relative`` below this one, one name at a time (``""``
        is a new descriptor on this one)."""
        parts = [part for part in relative.split("/") if part]
        if not parts:
            return Success(ChildDir(os.dup(self.fd), self.where))
        reached = self.sub(parts[0])
        for name in parts[1:]:
            reached = reached.bind(partial(_stepped, name=name))
        return reached

    def regular_files(self, skipped: frozenset[str] = frozenset()) -> Generator[tuple[str, int], None, None]:
        """Every regular file with one name in this tree, as (its path below here, a descriptor the
        caller closes), in name order; links, FIFOs, devices, folders named in ``skipped`` and what cannot
        be opened are skipped. Walked with a stack, not recursion, so no depth the child makes raises (a
        folder that cannot be opened, past the descriptors left, is skipped)."""
        frames: list[tuple[ChildDir | None, str, list[str]]] = [(None, "", list(reversed(self.names())))]
        try:
            while frames:
                held, prefix, names = frames[-1]
                if not names:
                    frames.pop()
                    if held is not None:
                        held.close()
                    continue
                directory, name = held or self, names.pop()
                mode = _mode(directory.status(name))
                if stat.S_ISREG(mode):
                    opened = directory.reader(name)
                    if isinstance(opened, Success):
                        yield prefix + name, opened.unwrap()
                elif stat.S_ISDIR(mode) and name not in skipped:
                    inner = directory.sub(name)
                    if isinstance(inner, Success):
                        frames.append((inner.unwrap(), f"{prefix}{name}/", list(reversed(inner.unwrap().names()))))
        finally:  # a walk closed part way still closes the folders it holds
            for held, _, _ in frames:
                if held is not None:
                    held.close()

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def real_directory(path: str) -> str:
    """The real path of the directory ``path`` names now, resolved by the kernel in one open
    (``O_PATH``, read back from ``/proc/self/fd``), so no component is looked up twice; ``path`` itself
    when it cannot be opened."""
    try:
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return os.path.normpath(path)
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.normpath(path)
    finally:
        os.close(fd)


_COPY_CHUNK = 1024 * 1024


def copy_data(source: int, target: int) -> None:
    """The regular file ``source`` (a child's) copied to ``target`` as the same bytes, its holes kept
    holes (``SEEK_DATA``/``SEEK_HOLE``): a file the child extended to a terabyte with one ``truncate``
    costs the copy no disk and no time (raises ``OSError``)."""
    size = os.fstat(source).st_size
    offset = 0
    while offset < size:
        try:
            start = os.lseek(source, offset, os.SEEK_DATA)
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
            break
        end = min(os.lseek(source, start, os.SEEK_HOLE), size)
        while start < end:
            chunk = os.pread(source, min(_COPY_CHUNK, end - start), start)
            if not chunk:
                end = start
                break
            start += os.pwrite(target, chunk, start)
        offset = max(end, offset + 1)
    os.ftruncate(target, size)


def write_new_file(root: str, name: str, data: bytes) -> Result[None, Refusal]:
    """``data`` as the new file ``name`` (0600) in the directory ``root`` metaharness made (the scratch
    root): a name the child planted there first is refused, never written through."""
    try:
        directory = ChildDir.open(root)
    except OSError as error:
        return Failure(Refusal("name-refused", f"{root} could not be used: {error.strerror or error}"))
    try:
        return directory.write_new(name, data).map(lambda _status: None)
    finally:
        directory.close()


_DEEPEST = 64
"""How many folders :func:`remove_tree` holds open at once; a folder deeper is moved up to the root first."""


def remove_tree(root: str) -> None:
    """Remove the tree ``root`` metaharness made (a run's scratch root), once the child has ended:
    every name is removed by ``unlinkat`` or ``rmdir`` through its folder's descriptor, so a link the
    child planted is removed itself and nothing outside is touched; walked with a stack, not recursion,
    a folder past ``_DEEPEST`` moved up to the root by ``renameat``, so no depth the child made raises
    or holds more descriptors. What cannot be removed stays; nothing here raises."""
    try:
        top = ChildDir.open(root)
    except OSError:
        return
    frames: list[tuple[ChildDir, str, list[str]]] = [(top, "", list(top.names()))]
    moved = 0
    while frames:
        directory, name, names = frames[-1]
        if not names:
            frames.pop()
            if frames:
                directory.close()
                _quietly(partial(os.rmdir, name, dir_fd=frames[-1][0].fd))
            continue
        entry = names.pop()
        if not stat.S_ISDIR(_mode(directory.status(entry))):
            _quietly(partial(os.unlink, entry, dir_fd=directory.fd))
        elif len(frames) >= _DEEPEST:
            moved += 1
            if _quietly(partial(os.rename, entry, f".removing-{moved}", src_dir_fd=directory.fd, dst_dir_fd=top.fd)):
                frames[0][2].append(f".removing-{moved}")
        elif isinstance(inner := directory.sub(entry), Success):
            frames.append((inner.unwrap(), entry, list(inner.unwrap().names())))
    top.close()
    _quietly(partial(os.rmdir, root))


def _quietly(operation: Callable[[], None]) -> bool:
    """Whether ``operation`` succeeded; an ``OSError`` leaves the name where it is."""
    try:
        operation()
    except OSError:
        return False
    return True
