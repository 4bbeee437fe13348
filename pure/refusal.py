"""A refusal as a value: a stable kebab-case code and a one-line message (spec 10 §1, §12).

Pure stages return ``Result[T, Refusal]``; only the shell turns a ``Refusal`` into the stderr line
``metaharness: <code>: <message>`` and exit 2.
"""

from __future__ import annotations

import msgspec


class Refusal(msgspec.Struct, frozen=True):
    """Why a verb will not do its job: ``code`` is the spec's kebab-case name, ``message`` names the value."""

    code: str
    message: str

    def line(self) -> str:
        """The single stderr line of spec 10 §1, line breaks in the message replaced by spaces."""
        flat = " ".join(self.message.splitlines())
        return f"metaharness: {self.code}: {flat}"
