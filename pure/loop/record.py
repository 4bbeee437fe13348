"""The ``--json`` record (docs/loop.md#the-record): one struct per kind, ``kind`` first, fields in the contract's order.

Fields marked † in docs/loop.md#the-record default to an empty value and are omitted then; every other field is
always written.
"""

from __future__ import annotations

from typing import Any

import msgspec

from metaharness.pure.jsonline import compact
from metaharness.pure.loop.budget import StopObject
from metaharness.pure.wires.neutral import Usage as NeutralUsage


class _Line(msgspec.Struct, frozen=True, tag_field="kind", omit_defaults=True, kw_only=True):
    """A record line."""


class Withheld(msgspec.Struct, frozen=True):
    """A catalogue entry not published, and why."""

    tool: str
    reason: str


class ContextEntry(msgspec.Struct, frozen=True, omit_defaults=True, kw_only=True):
    """One part of the standing instruction (docs/loop.md#standing-instruction)."""

    id: str
    kind: str
    trust: str
    cache: str
    path: str | None = None
    captured_at: str | None = None
    bytes: int
    sha256: str


class Started(_Line, frozen=True, tag="started", kw_only=True):
    model: str
    workspace: str
    published_tools: tuple[str, ...]
    operations: tuple[str, ...] = ()
    withheld: tuple[Withheld, ...]
    skills: tuple[str, ...]
    agents: tuple[str, ...]
    profiles: tuple[str, ...]
    context: tuple[ContextEntry, ...]
    toolchains: tuple[str, ...]
    mcp: tuple[str, ...]
    credential_source: str


class Rates(_Line, frozen=True, tag="rates", kw_only=True):
    source: str
    as_of: str


class TurnStarted(_Line, frozen=True, tag="turn-started", kw_only=True):
    turn: int


class TextDelta(_Line, frozen=True, tag="text-delta", kw_only=True):
    text: str


class ReasoningDelta(_Line, frozen=True, tag="reasoning-delta", kw_only=True):
    text: str


class ToolArgumentsDelta(_Line, frozen=True, tag="tool-arguments-delta", kw_only=True):
    call_id: str
    delta: str


class TurnRetried(_Line, frozen=True, tag="turn-retried", kw_only=True):
    turn: int
    attempt: int
    reason: str


class UsageLine(_Line, frozen=True, tag="usage", kw_only=True):
    model: str
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_creation_input_tokens: int | None = None


class Cost(_Line, frozen=True, tag="cost", kw_only=True):
    model: str
    micro_usd: int


class ToolRequested(_Line, frozen=True, tag="tool-requested", kw_only=True):
    call_id: str
    name: str
    arguments: Any
    operation: str | None = None
    subjects: tuple[str, ...] = ()


class ApprovalRequired(_Line, frozen=True, tag="approval-required", kw_only=True):
    call_id: str
    name: str


class ApprovalResolved(_Line, frozen=True, tag="approval-resolved", kw_only=True):
    call_id: str
    approved: bool


class ToolCompleted(_Line, frozen=True, tag="tool-completed", kw_only=True):
    call_id: str
    failed: bool


class WarningLine(_Line, frozen=True, tag="warning", kw_only=True):
    code: str
    message: str


class Finished(_Line, frozen=True, tag="finished", kw_only=True):
    stop: StopObject
    turns: int


class RefusedLine(_Line, frozen=True, tag="refused", kw_only=True):
    reason: str


class SessionWritten(_Line, frozen=True, tag="session", kw_only=True):
    id: str
    path: str


RecordLine = (
    Started
    | Rates
    | TurnStarted
    | TextDelta
    | ReasoningDelta
    | ToolArgumentsDelta
    | TurnRetried
    | UsageLine
    | Cost
    | ToolRequested
    | ApprovalRequired
    | ApprovalResolved
    | ToolCompleted
    | WarningLine
    | Finished
    | RefusedLine
    | SessionWritten
)


def usage_line(model: str, usage: NeutralUsage) -> UsageLine:
    """The ``usage`` line of a turn that reported usage."""
    return UsageLine(
        model=model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        cache_creation_input_tokens=usage.cache_creation_input_tokens,
    )


def refused_line(reason: str) -> RefusedLine:
    """The single ``refused`` line; line breaks in the reason become spaces (docs/loop.md#loop-exit-codes)."""
    return RefusedLine(reason=" ".join(reason.splitlines()))


def encode_line(line: RecordLine) -> bytes:
    """One record line's bytes, newline included."""
    return compact(line) + b"\n"
