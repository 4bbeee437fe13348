"""Each adapter's capabilities descriptor, the table a run consults (docs/adapters/common.md#descriptor,
docs/adapters/b10x.md#rendering, #capabilities-and-doctor, docs/adapters/claude.md; docs/adapters/codex.md).

``descriptor_json`` is the exact text of ``metaharness capabilities <KIND>``; ``descriptor_lines`` of
``--render``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

import msgspec

from metaharness.pure.adapter import Status
from metaharness.pure.adapters import adapter_of
from metaharness.pure.jsonline import compact
from metaharness.pure.kind import Kind
from metaharness.pure.operations import OPERATION_NAMES

OPERATIONS = OPERATION_NAMES
"""The eleven operations in vocabulary order (docs/adapters/common.md#descriptor, docs/decisions.md#operations)."""

COMMANDS: tuple[str, ...] = (
    "tool.decide",
    "interrupt",
    "halt",
    "frame.set",
    "message.inject",
    "steer",
    "permission.set",
)
"""The seven ``metaharness.command/1`` commands (docs/events.md#commands)."""

REFUSED_COMMAND: Mapping[str, str] = MappingProxyType({"refused": "UNSUPPORTED_CONTROL"})
"""A command the kind's adapter does not honour (``DescriptorFacts.honoured_commands``)."""


class AdapterIdentity(msgspec.Struct, frozen=True):
    """The adapter's identity; ``id`` before ``class`` (docs/adapters/common.md#descriptor)."""

    id: Kind
    class_: Literal["harness", "direct_provider"] = msgspec.field(name="class")


class Descriptor(msgspec.Struct, frozen=True, kw_only=True):
    """The capabilities descriptor, keys in docs/adapters/common.md#descriptor's order."""

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
        name: "honoured" if name in facts.honoured_commands else dict(REFUSED_COMMAND) for name in COMMANDS
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
    writes it, then a newline (docs/adapters/common.md#descriptor)."""
    return msgspec.json.format(compact(descriptor(kind)), indent=2).decode("utf-8") + "\n"


def descriptor_lines(kind: Kind) -> str:
    """``capabilities <KIND> --render``: one line per operation in vocabulary order
    (docs/adapters/common.md#descriptor)."""
    rendering = descriptor(kind).rendering
    return "".join(
        f"{op:<16} -> {rendering[op] if rendering[op] is not None else '(no vendor tool)'}\n"
        for op in OPERATIONS
    )
