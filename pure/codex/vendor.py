"""Codex at its pin, as every codex stage names it: the program, the pinned versions, the Responses API's
request path, the loopback placeholder's variable and the pinned binary's tool names
(docs/adapters/codex.md, docs/vendor-facts.md).

A leaf: the adapter value and the kind's stages import it, so neither imports the other's facts back."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from metaharness.pure.adapter import MCP_CALL_TEMPLATE

KIND: Final = "codex"
PROGRAM = "codex"
PINS = ("0.171.0",)

HONOURED_COMMANDS = frozenset({"tool.decide", "interrupt", "halt"})
"""The ``metaharness.command/1`` commands the codex adapter honours; the rest are ``UNSUPPORTED_CONTROL``
(docs/events.md#commands). Its descriptor states them and its session steers by them."""
UPSTREAM = "https://api.openai.com"
WIRE_PATHS = ("/v1/responses",)
"""The Responses API's own request path, the only one a route forwards."""
LOOPBACK_KEY_VARIABLE = "METAHARNESS_LOOPBACK_KEY"
"""The variable the codex child reads its loopback placeholder from (the provider's ``env_key``)."""

RENDERING: Mapping[str, str] = MappingProxyType(
    {"file.write": "apply_patch", "file.edit": "apply_patch", "shell": "Bash", "mcp.call": MCP_CALL_TEMPLATE}
)
"""Codex's tool for each operation; the rest render to nothing (docs/adapters/codex.md)."""
