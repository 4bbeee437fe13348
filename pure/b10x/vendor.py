"""The b10x loop at its pin, as every b10x stage names it: the program, the pinned version and the loop's
tool names (docs/adapters/b10x.md).

A leaf: the adapter value and the kind's stages import it, so neither imports the other's facts back."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

KIND: Final = "b10x"
PROGRAM = "b10x-harness"
PIN = "0.22.0"

HONOURED_COMMANDS = frozenset({"tool.decide", "interrupt", "halt"})
"""The ``metaharness.command/1`` commands the b10x adapter honours; the rest are ``UNSUPPORTED_CONTROL``
(docs/events.md#commands). Its descriptor states them and its seam steers by them."""

RENDERING: Mapping[str, str] = MappingProxyType(
    {
        "file.read": "file_read",
        "file.write": "file_write",
        "file.edit": "file_edit",
        "dir.list": "dir_list",
        "search": "search",
        "shell": "run",
    }
)
"""The loop's tool for each operation; the rest render to nothing (docs/adapters/b10x.md)."""

DEFAULT_MODELS: Mapping[str, str] = MappingProxyType({"openai-responses": "gpt-6.2-sol", "anthropic-messages": "claude-opus-5-5"})
"""The loop's ``--model`` when the run names none, per wire: what the pinned vendor CLI of that wire asks for
without one (Codex 0.171.0, Claude Code 2.1.332; docs/adapters/b10x.md#argv)."""
