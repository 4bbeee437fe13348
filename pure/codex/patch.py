"""An ``apply_patch`` patch read the way the pinned Codex (0.171.0) reads it, so every path the binary
would touch is a subject: a header the binary applies and metaharness did not see would bypass the
frame, and a patch it cannot read that way is denied.

The rules, as that parser applies them:
- the patch text is trimmed of whitespace (Rust's ``char::is_whitespace`` set) and split on ``\\n``,
  one trailing ``\\r`` dropped from each line;
- its first line, trimmed, is ``*** Begin Patch`` and its last, trimmed, ``*** End Patch``; failing
  that, a heredoc wrapper (first line exactly ``<<EOF``, ``<<'EOF'`` or ``<<"EOF"``, last line ending in
  ``EOF``, four lines at least) is removed and the inside must pass that test;
- a hunk begins where the previous one ended, and its first line is read *trimmed*: ``*** Add File: ``,
  ``*** Delete File: `` or ``*** Update File: `` followed by the path (so `` *** Add File: x`` is a
  header there); anything else makes the whole patch invalid;
- an added file's body is the following lines that begin with ``+``; a delete is one line;
- an update may be followed at once by ``*** Move to: <path>`` (read untrimmed), then chunks: blank
  lines are skipped, a line beginning with ``*`` ends the hunk, and each chunk is an optional ``@@`` or
  ``@@ <context>`` line (required after the first chunk) and lines beginning with `` ``, ``+``, ``-``
  or empty, closed by an exact ``*** End of File`` or by any other line; an update with no chunk, a
  chunk with no line, and a first chunk line of another kind are errors.
"""

from __future__ import annotations

from typing import Literal

from msgspec import Struct
from returns.result import Failure, Result, Success

RUST_WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
"""The characters Rust's ``str::trim`` removes (Unicode ``White_Space``); Python's ``str.strip``
removes four more (``\\x1c``–``\\x1f``), so the two must not be mixed."""

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File: "
DELETE_FILE = "*** Delete File: "
UPDATE_FILE = "*** Update File: "
MOVE_TO = "*** Move to: "
END_OF_FILE = "*** End of File"
_HEREDOC_OPENINGS = ("<<EOF", "<<'EOF'", '<<"EOF"')


class PatchHunk(Struct, frozen=True):
    """One file operation of a patch: ``add``, ``delete`` or ``update`` of ``path`` (and, for an
    update, the ``move_to`` path it is renamed to)."""

    kind: Literal["add", "delete", "update"]
    path: str
    move_to: str | None = None


def _trim(text: str) -> str:
    return text.strip(RUST_WHITESPACE)


def _lines(text: str) -> list[str]:
    """Rust's ``str::lines``: split on ``\\n``, a trailing ``\\r`` dropped, no final empty line."""
    if not text:
        return []
    parts = text.split("\n")
    if text.endswith("\n"):
        parts.pop()
    return [part.removesuffix("\r") for part in parts]


def _check_boundaries(lines: list[str]) -> Result[list[str], str]:
    """The hunk lines between the begin and end markers."""
    if not lines or _trim(lines[0]) != BEGIN_PATCH:
        return Failure(f"the first line of the patch must be '{BEGIN_PATCH}'")
    if _trim(lines[-1]) != END_PATCH:
        return Failure(f"the last line of the patch must be '{END_PATCH}'")
    return Success(lines[1:-1])


def _body(lines: list[str]) -> Result[list[str], str]:
    """The hunk lines, a heredoc wrapper removed when the bare text has no markers."""
    wrapped = len(lines) >= 4 and lines[0] in _HEREDOC_OPENINGS and lines[-1].endswith("EOF")
    return _check_boundaries(lines).lash(lambda bare: _check_boundaries(lines[1:-1]) if wrapped else Failure(bare))


def _chunk_length(lines: list[str], line_number: int, first: bool) -> Result[int, str]:
    """How many lines one update chunk takes."""
    if lines[0] == "@@" or lines[0].startswith("@@ "):
        start = 1
    elif first:
        start = 0
    else:
        return Failure(f"line {line_number}: an update chunk after the first must begin with @@, not {lines[0]!r}")
    if start >= len(lines):
        return Failure(f"line {line_number + 1}: the update chunk has no lines")
    taken = 0
    for line in lines[start:]:
        if line == END_OF_FILE:
            if taken == 0:
                return Failure(f"line {line_number + 1}: the update chunk has no lines")
            taken += 1
            break
        if line and line[0] not in " +-":
            if taken == 0:
                return Failure(f"line {line_number + 1}: {line!r} is not a context, added or removed line")
            break
        taken += 1
    return Success(start + taken)


def _update_hunk(lines: list[str], line_number: int, path: str) -> Result[tuple[PatchHunk, int], str]:
    """An ``*** Update File:`` hunk: its optional move, then at least one chunk."""
    taken = 1
    move_to = None
    if len(lines) > 1 and lines[1].startswith(MOVE_TO):
        move_to = lines[1][len(MOVE_TO) :]
        taken = 2
    chunks = 0
    while taken < len(lines):
        if not _trim(lines[taken]):
            taken += 1
            continue
        if lines[taken].startswith("*"):
            break
        length = _chunk_length(lines[taken:], line_number + taken, chunks == 0)
        if isinstance(length, Failure):
            return Failure(length.failure())
        taken += length.unwrap()
        chunks += 1
    if chunks == 0:
        return Failure(f"line {line_number}: the update of {path!r} has no chunk")
    return Success((PatchHunk("update", path, move_to), taken))


def _hunk(lines: list[str], line_number: int) -> Result[tuple[PatchHunk, int], str]:
    """The hunk at the start of ``lines`` and how many lines it takes."""
    header = _trim(lines[0])
    if header.startswith(ADD_FILE):
        taken = 1
        while taken < len(lines) and lines[taken].startswith("+"):
            taken += 1
        return Success((PatchHunk("add", header[len(ADD_FILE) :]), taken))
    if header.startswith(DELETE_FILE):
        return Success((PatchHunk("delete", header[len(DELETE_FILE) :]), 1))
    if header.startswith(UPDATE_FILE):
        return _update_hunk(lines, line_number, header[len(UPDATE_FILE) :])
    return Failure(
        f"line {line_number}: {header!r} is not a hunk header ({ADD_FILE.strip()}, {DELETE_FILE.strip()} "
        f"or {UPDATE_FILE.strip()} expected)"
    )


def parse_patch(patch: str) -> Result[tuple[PatchHunk, ...], str]:
    """The hunks of ``patch`` in order, or why the pinned Codex would refuse to apply it."""
    body = _body(_lines(_trim(patch)))
    if isinstance(body, Failure):
        return Failure(body.failure())
    remaining = body.unwrap()
    hunks: list[PatchHunk] = []
    line_number = 2
    while remaining:
        read = _hunk(remaining, line_number)
        if isinstance(read, Failure):
            return Failure(read.failure())
        hunk, taken = read.unwrap()
        hunks.append(hunk)
        line_number += taken
        remaining = remaining[taken:]
    return Success(tuple(hunks))
