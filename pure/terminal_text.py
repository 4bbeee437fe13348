"""What metaharness prints for a person is text, never a terminal's control sequence (docs/view.md#control-characters):
a leaf, so every printer of a record's or a child's strings (the view, ``run``'s progress and failure lines, a
refusal's line) escapes them alike."""

from __future__ import annotations

_ESCAPED = {code: f"\\u{code:04x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if code not in (0x09, 0x0A)}
_ESCAPED_ON_ONE_LINE = {**_ESCAPED, 0x0A: "\\u000a"}


def shown(text: str, *, one_line: bool = False) -> str:
    """``text`` as a terminal may print it: every control character (C0 but tab and line feed, DEL, C1) written
    as its ``\\u`` escape of four hex digits, so no string of a record moves the cursor, erases a line, retitles
    the terminal or sets its clipboard; ``one_line`` escapes line feeds too."""
    return text.translate(_ESCAPED_ON_ONE_LINE if one_line else _ESCAPED)
