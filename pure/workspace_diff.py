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


_QUOTED = {**{code: f"\\{code:03o}" for code in (*range(0x20), 0x7F)}, 0x07: "\\a", 0x08: "\\b", 0x09: "\\t",
           0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f", 0x0D: "\\r", ord('"'): '\\"', ord("\\"): "\\\\"}


def diff_name(prefix: str, path: str) -> str:
    """``prefix`` and ``path`` as a diff names a file: quoted as git quotes it (C escapes in double quotes) when
    the path holds a control character, a quote or a backslash, so a name the child made cannot end its header
    line and forge another file's header or hunk (docs/cli.md#keeping-the-workspace-diff)."""
    named = prefix + path
    quoted = named.translate(_QUOTED)
    return named if quoted == named else f'"{quoted}"'


def _text(state: FileState | None) -> list[str] | None:
    """The file's lines, each ended by its line feed (only ``\\n`` ends a line in a diff, never another of
    ``str.splitlines``' breaks), or ``None`` for a binary (not UTF-8) or oversized file; no file is no lines."""
    if state is None:
        return []
    if state.data is None:
        return None
    try:
        text = state.data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    *ended, last = text.split("\n")
    return [line + "\n" for line in ended] + ([last] if last else [])


def _file_diff(path: str, before: FileState | None, after: FileState | None) -> str:
    old, new = _text(before), _text(after)
    source = "/dev/null" if before is None else diff_name("a/", path)
    target = "/dev/null" if after is None else diff_name("b/", path)
    if old is None or new is None:
        return f"Binary files {source} and {target} differ\n"
    lines = difflib.unified_diff(old, new, source, target)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def workspace_diff(before: Mapping[str, FileState], after: Mapping[str, FileState]) -> bytes:
    """Every file added, removed or changed, in path order; empty when nothing changed."""
    paths = sorted(set(before) | set(after))
    changed = (path for path in paths if (before.get(path) or None) != (after.get(path) or None))
    return "".join(_file_diff(path, before.get(path), after.get(path)) for path in changed).encode("utf-8")
