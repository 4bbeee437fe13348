"""Claude Code at its pin, as every claude stage names it: the program, the pinned versions, the Messages
API's request paths and the pinned binary's tool names (docs/adapters/claude.md, docs/vendor-facts.md).

A leaf: the adapter value and the kind's stages import it, so neither imports the other's facts back."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from metaharness.pure.adapter import MCP_CALL_TEMPLATE

KIND: Final = "claude"
PROGRAM = "claude"
PINS = ("2.1.332",)

HONOURED_COMMANDS = frozenset({"tool.decide", "interrupt", "halt"})
"""The ``metaharness.command/1`` commands the claude adapter honours; the rest are ``UNSUPPORTED_CONTROL``
(docs/events.md#commands). Its descriptor states them and its session steers by them."""
UPSTREAM = "https://api.anthropic.com"
WIRE_PATHS = ("/v1/messages", "/v1/messages/count_tokens")
"""The Messages API's own request paths, the only ones a route forwards."""

RENDERING: Mapping[str, str] = MappingProxyType(
    {
        "file.read": "Read",
        "file.write": "Write",
        "file.edit": "Edit",
        "shell": "Bash",
        "web.read": "WebFetch",
        "skill.load": "Skill",
        "subagent.spawn": "Agent",
        "mcp.call": MCP_CALL_TEMPLATE,
    }
)
"""Claude Code's tool for each operation, as the pinned 2.1.332 names it in its API tool list and its
hook's ``tool_name`` (the subagent tool is ``Agent``; only the ``init`` record says ``Task``). It
offers no ``Glob``, ``Grep`` or ``TodoWrite``, so ``dir.list``, ``search`` and ``task.todo`` render to
nothing (docs/vendor-facts.md)."""

