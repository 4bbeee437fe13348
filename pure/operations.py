"""The closed operation vocabulary (docs/decisions.md#operations), named once: a leaf, so the descriptor
(``metaharness.pure.capabilities``) lists it without importing the frame stages."""

from __future__ import annotations

OPERATION_NAMES: tuple[str, ...] = (
    "file.read",
    "file.write",
    "file.edit",
    "dir.list",
    "search",
    "shell",
    "web.read",
    "skill.load",
    "subagent.spawn",
    "task.todo",
    "mcp.call",
)
"""The eleven operations in the order the reference lists them (docs/decisions.md#operations,
docs/adapters/common.md#descriptor)."""
