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

from metaharness.pure.adapter import Status
from metaharness.pure.adapters import Kind, adapter_of
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

REFUSED_COMMAND: Mapping[str, str] = MappingProxyType({"refused": "UNSUPPORTED_CONTROL"})
HONOURED_COMMANDS = frozenset({"tool.decide", "interrupt", "halt"})
"""Every adapter of this version honours these and refuses the rest (spec 40 §8, spec 50 §3)."""


class AdapterIdentity(msgspec.Struct, frozen=True):
    """The adapter's identity; ``id`` before ``class`` (spec 10 §5)."""

    id: Kind
    class_: Literal["harness", "direct_provider"] = msgspec.field(name="class")


class Descriptor(msgspec.Struct, frozen=True, kw_only=True):
    """The capabilities descriptor, keys in spec 10 §5's order."""

    adapter: AdapterIdentity
    versions_pinned: tuple[str, ...]
    tiers: dict[str, Status]
    commands: dict[str, str | dict[str, str]]
    decision_modes: dict[str, Status]
    rendering: dict[str, str | None]
    mcp_servers: tuple[str, ...] = ()


def descriptor(kind: Kind) -> Descriptor:
    """The kind's descriptor, from its adapter's pins and descriptor facts (docs/adapters/common.md#descriptor)."""
    adapter = adapter_of(kind)
    facts = adapter.descriptor
    commands = {
        name: "honoured" if name in HONOURED_COMMANDS else dict(REFUSED_COMMAND) for name in COMMANDS
    }
    return Descriptor(
        adapter=AdapterIdentity(kind, facts.adapter_class),
        versions_pinned=adapter.pins,
        tiers=dict(sorted(facts.tiers.items())),
        commands=dict(sorted(commands.items())),
        decision_modes=dict(sorted(facts.decision_modes.items())),
        rendering={op: facts.rendering.get(op) for op in sorted(OPERATIONS)},
    )


def descriptor_json(kind: Kind) -> str:
    """``capabilities <KIND>``: the descriptor as ``json.dumps(…, indent=2, ensure_ascii=False)``
    writes it, then a newline (spec 10 §5)."""
    return msgspec.json.format(compact(descriptor(kind)), indent=2).decode("utf-8") + "\n"


def descriptor_lines(kind: Kind) -> str:
    """``capabilities <KIND> --render``: one line per operation in vocabulary order (spec 10 §5)."""
    rendering = descriptor(kind).rendering
    return "".join(
        f"{op:<16} -> {rendering[op] if rendering[op] is not None else '(no vendor tool)'}\n"
        for op in OPERATIONS
    )
