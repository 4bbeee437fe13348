"""A refusal as a value: a stable kebab-case code and a one-line message (docs/cli.md; docs/hermetic.md#refusal-order).

Pure stages return ``Result[T, Refusal]``; only the shell turns a ``Refusal`` into the stderr line
``metaharness: <code>: <message>`` and exit 2.
"""

from __future__ import annotations

import msgspec


class Refusal(msgspec.Struct, frozen=True):
    """Why a verb will not do its job: ``code`` is the documented kebab-case name, ``message`` names the value."""

    code: str
    message: str

    def line(self) -> str:
        """The single stderr line of docs/cli.md, line breaks in the message replaced by spaces."""
        flat = " ".join(self.message.splitlines())
        return f"metaharness: {self.code}: {flat}"
