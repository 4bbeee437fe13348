"""The workspace diff ``--retain-dir`` keeps (docs/cli.md#keeping-the-workspace-diff): the run's working
directory as it was at the spawn against how the run left it, as a unified diff over the files'
bytes. No program runs to make it (no ``git``, whose configuration the child could have written)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

import msgspec

FILE_TEXT_LIMIT = 1024 * 1024
"""A file past this many bytes is compared by digest only."""


class FileState(msgspec.Struct, frozen=True):
    """One regular file: its SHA-256, and its bytes when within :data:`FILE_TEXT_LIMIT`."""

    digest: str
    data: bytes | None


def _text(state: FileState | None) -> list[str] | None:
    """The file's lines, or ``None`` for a binary (not UTF-8) or oversized file; no file is no lines."""
    if state is None:
        return []
    if state.data is None:
        return None
    try:
        return state.data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _file_diff(path: str, before: FileState | None, after: FileState | None) -> str:
    old, new = _text(before), _text(after)
    source = "/dev/null" if before is None else f"a/{path}"
    target = "/dev/null" if after is None else f"b/{path}"
    if old is None or new is None:
        return f"Binary files {source} and {target} differ\n"
    lines = difflib.unified_diff(old, new, source, target)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def workspace_diff(before: Mapping[str, FileState], after: Mapping[str, FileState]) -> bytes:
    """Every file added, removed or changed, in path order; empty when nothing changed."""
    paths = sorted(set(before) | set(after))
    changed = (path for path in paths if (before.get(path) or None) != (after.get(path) or None))
    return "".join(_file_diff(path, before.get(path), after.get(path)) for path in changed).encode("utf-8")
