"""``metaharness-eval``'s out directory, which a run's child can write while the batch goes (under
``--confine off`` it is the user's, with the whole filesystem): every folder below ``--out`` is reached or
made one name at a time from the directory's descriptor (``O_DIRECTORY | O_NOFOLLOW``), and every file is
written as a new name (``O_CREAT | O_EXCL``) renamed over its place (``renameat``), so a link, FIFO or hard
link planted at a name is replaced, never written through or waited on (docs/eval.md#the-out-directory)."""

from __future__ import annotations

import os
import stat
from functools import partial
from pathlib import Path

from returns.result import Failure, Result, Success

from metaharness.pure.bounds import RESULT_FILE_LIMIT
from metaharness.pure.refusal import Refusal
from metaharness.shell.child_tree import ChildDir

_WRITING = ".writing."
"""The prefix of the name a file is written under before its rename over its place."""
_OPERATOR_MODES = 0o777
"""Folders and files as ``mkdir`` and ``open`` make them: the operator's umask decides."""


def open_out(out: Path) -> Result[ChildDir, Refusal]:
    """``--out``, made when missing and held by its descriptor, before any run starts (``out-unwritable``)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        return Success(ChildDir(os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), str(out)))
    except OSError as error:
        return Failure(Refusal("out-unwritable", f"{out}: {error.strerror or error}"))


def existing_out(out: Path) -> ChildDir | None:
    """``--out`` held by its descriptor when it is already a directory (``--resume``), else ``None``."""
    try:
        return ChildDir(os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), str(out))
    except OSError:
        return None


def made_folder(root: ChildDir, relative: str) -> Result[ChildDir, Refusal]:
    """The folder ``relative`` below ``root``, each missing name made, none reached through a link."""
    reached: Result[ChildDir, Refusal] = Success(ChildDir(os.dup(root.fd), root.where))
    for name in relative.split("/"):
        reached = reached.bind(partial(_made_in, name=name))
    return reached


def _made_in(folder: ChildDir, name: str) -> Result[ChildDir, Refusal]:
    try:
        return folder.make_dir(name, _OPERATOR_MODES)
    finally:
        folder.close()


def replace_file(folder: ChildDir, name: str, data: bytes) -> Result[None, Refusal]:
    """``data`` as the file ``name`` in ``folder``: written as ``.writing.<name>`` (one a crashed batch
    left is removed first), then renamed over whatever is at ``name``; a directory there is refused."""
    temporary = _WRITING + name
    folder.unlink(temporary)
    return folder.write_new(temporary, data, _OPERATOR_MODES).bind(lambda made: folder.rename(temporary, name, made))


def remove_file(folder: ChildDir, name: str) -> Result[None, Refusal]:
    """The name ``name`` removed itself (a link, never what it names); a missing one is no refusal."""
    if folder.status(name) is None:
        return Success(None)
    return folder.unlink(name)


def read_result_file(root: ChildDir, relative: str, name: str) -> bytes | None:
    """The first ``RESULT_FILE_LIMIT`` bytes of the regular file ``relative/name`` (one name), ``None``
    when it is missing or anything else (a link, a FIFO, a hard link, a folder)."""
    folder = root.reach(relative)
    if isinstance(folder, Failure):
        return None
    try:
        read = folder.unwrap().read(name, RESULT_FILE_LIMIT)
    finally:
        folder.unwrap().close()
    return read.value_or(None)


def is_regular(root: ChildDir, relative: str, name: str) -> bool:
    """Whether ``relative/name`` below ``root`` is a regular file, reached through no link."""
    folder = root.reach(relative)
    if isinstance(folder, Failure):
        return False
    try:
        status = folder.unwrap().status(name)
    finally:
        folder.unwrap().close()
    return status is not None and stat.S_ISREG(status.st_mode)
