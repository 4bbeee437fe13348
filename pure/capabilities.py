"""Each adapter's capabilities descriptor, the table a run consults (spec 10 §5, spec 40 §7–§8,
spec 50 §3–§4).

``descriptor_json`` is the exact text of ``metaharness capabilities <KIND>``; ``descriptor_lines`` of
``--render``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

import msgspec

from metaharness.pure.environment import Kind
from metaharness.pure.jsonline import compact

OPERATIONS: tuple[str, ...] = (
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
"""The eleven operations in vocabulary order (spec 10 §5, spec 20 §7)."""

COMMANDS: tuple[str, ...] = (
    "tool.decide",
    "interrupt",
    "halt",
    "frame.set",
    "message.inject",
    "steer",
    "permission.set",
)
"""The seven ``metaharness.command/1`` commands (spec 20 §5)."""

Status = Literal["delivered", "unverified", "absent"]
REFUSED_COMMAND: Mapping[str, str] = MappingProxyType({"refused": "UNSUPPORTED_CONTROL"})
HONOURED_COMMANDS = frozenset({"tool.decide", "interrupt", "halt"})
"""Every adapter of this version honours these and refuses the rest (spec 40 §8, spec 50 §3)."""

MCP_CALL_TEMPLATE = "mcp__<server>__<tool>"


class Adapter(msgspec.Struct, frozen=True):
    """The adapter's identity; ``id`` before ``class`` (spec 10 §5)."""

    id: Kind
    class_: Literal["harness", "direct_provider"] = msgspec.field(name="class")


class Descriptor(msgspec.Struct, frozen=True, kw_only=True):
    """The capabilities descriptor, keys in spec 10 §5's order."""

    adapter: Adapter
    versions_pinned: tuple[str, ...]
    tiers: dict[str, Status]
    commands: dict[str, str | dict[str, str]]
    decision_modes: dict[str, Status]
    rendering: dict[str, str | None]
    mcp_servers: tuple[str, ...] = ()


def _descriptor(
    kind: Kind,
    adapter_class: Literal["harness", "direct_provider"],
    pins: tuple[str, ...],
    tiers: dict[str, Status],
    modes: dict[str, Status],
    rendering: Mapping[str, str],
) -> Descriptor:
    commands = {
        name: "honoured" if name in HONOURED_COMMANDS else dict(REFUSED_COMMAND) for name in COMMANDS
    }
    return Descriptor(
        adapter=Adapter(kind, adapter_class),
        versions_pinned=pins,
        tiers=dict(sorted(tiers.items())),
        commands=dict(sorted(commands.items())),
        decision_modes=dict(sorted(modes.items())),
        rendering={op: rendering.get(op) for op in sorted(OPERATIONS)},
    )


CLAUDE_RENDERING: Mapping[str, str] = MappingProxyType(
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

CODEX_RENDERING: Mapping[str, str] = MappingProxyType(
    {"file.write": "apply_patch", "file.edit": "apply_patch", "shell": "Bash", "mcp.call": MCP_CALL_TEMPLATE}
)
"""Codex's tool for each operation; the rest render to nothing (spec 50 §4)."""

B10X_RENDERING: Mapping[str, str] = MappingProxyType(
    {
        "file.read": "file_read",
        "file.write": "file_write",
        "file.edit": "file_edit",
        "dir.list": "dir_list",
        "search": "search",
        "shell": "run",
    }
)
"""The loop's tool for each operation; the rest render to nothing (spec 40 §7)."""

_ALL_DELIVERED: dict[str, Status] = {"ask": "delivered", "frame": "delivered", "observe": "delivered"}

DESCRIPTORS: Mapping[str, Descriptor] = MappingProxyType(
    {
        "claude": _descriptor(
            "claude",
            "harness",
            ("2.1.332",),
            {"registration": "delivered", "call": "delivered", "turn": "unverified", "kill": "delivered"},
            _ALL_DELIVERED,
            CLAUDE_RENDERING,
        ),
        "codex": _descriptor(
            "codex",
            "harness",
            ("0.171.0",),
            {"registration": "unverified", "call": "delivered", "turn": "unverified", "kill": "delivered"},
            _ALL_DELIVERED,
            CODEX_RENDERING,
        ),
        "b10x": _descriptor(
            "b10x",
            "direct_provider",
            ("0.22.0",),
            {"registration": "unverified", "call": "unverified", "turn": "unverified", "kill": "unverified"},
            {"frame": "delivered", "ask": "unverified", "observe": "delivered"},
            B10X_RENDERING,
        ),
    }
)
"""Each kind's descriptor (spec 40 §8, spec 50 §3–§4)."""


def descriptor_json(kind: str) -> str:
    """``capabilities <KIND>``: the descriptor as ``json.dumps(…, indent=2, ensure_ascii=False)``
    writes it, then a newline (spec 10 §5)."""
    return msgspec.json.format(compact(DESCRIPTORS[kind]), indent=2).decode("utf-8") + "\n"


def descriptor_lines(kind: str) -> str:
    """``capabilities <KIND> --render``: one line per operation in vocabulary order (spec 10 §5)."""
    rendering = DESCRIPTORS[kind].rendering
    return "".join(
        f"{op:<16} -> {rendering[op] if rendering[op] is not None else '(no vendor tool)'}\n"
        for op in OPERATIONS
    )
