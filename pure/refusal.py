"""A refusal as a value: a stable kebab-case code and a one-line message (docs/cli.md; docs/hermetic.md#refusal-order).

Pure stages return ``Result[T, Refusal]``; only the shell turns a ``Refusal`` into the stderr line
``metaharness: <code>: <message>`` and exit 2.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from metaharness.pure.terminal_text import shown


class Refusal(msgspec.Struct, frozen=True):
    """Why a verb will not do its job: ``code`` is the documented kebab-case name, ``message`` names the value."""

    code: str
    message: str

    def line(self) -> str:
        """The single stderr line of docs/cli.md, line breaks in the message replaced by spaces and its other
        control characters escaped (docs/view.md#control-characters): a name the child made stays text."""
        flat = " ".join(self.message.splitlines())
        return shown(f"metaharness: {self.code}: {flat}", one_line=True)


def not_utf8(named: Iterable[tuple[str, str | None]]) -> Refusal | None:
    """``argument-not-utf8`` for the first ``(label, text)`` whose text is not UTF-8 (its bytes arrive from argv as
    surrogates), which no event could carry (docs/cli.md#bounds-on-what-a-run-reads); none when every text is."""
    for label, text in named:
        if text is not None and not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                return Refusal("argument-not-utf8", f"{label} is not UTF-8 text, so no event could carry it")
    return None
