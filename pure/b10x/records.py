"""The loop's ``--json`` record kinds as typed structs (docs/loop.md#the-record, read by
docs/adapters/b10x.md#reading-the-record).

Every field a 0.22.0 record may leave out, and every field an older loop never wrote, has a default, so
a record of an older or newer loop still reads; unknown fields are ignored. A line that is not one of
these shapes is ``opaque`` to the seam.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

import msgspec
from msgspec import Meta, Struct

from metaharness.pure.bounds import JSON_DEPTH_LIMIT, too_deep

Count: TypeAlias = Annotated[int, Meta(ge=0)]
"""A count or amount a record states (tokens, turns, micro-dollars): a record stating a negative one
does not read as its kind and is ``opaque``."""


class _Record(Struct, frozen=True, kw_only=True, tag_field="kind", forbid_unknown_fields=False):
    """One record line; the tag is its ``kind``."""


class WithheldEntry(Struct, frozen=True, kw_only=True, forbid_unknown_fields=False):
    """An unpublished catalogue entry and why; missing strings read ``""`` (docs/adapters/b10x.md#opening-event)."""

    tool: str = ""
    reason: str = ""


class Started(_Record, frozen=True, tag="started"):
    model: str | None = None
    workspace: str | None = None
    published_tools: tuple[str, ...] | None = None
    operations: tuple[str, ...] | None = None
    withheld: tuple[WithheldEntry, ...] | None = None
    skills: tuple[str, ...] | None = None
    agents: tuple[str, ...] | None = None
    credential_source: str | None = None


class CredentialRenewed(_Record, frozen=True, tag="credential-renewed"):
    source: str = ""
    provider: str = ""
    expires_unix: int | None = None
    refresh_token_rotated: bool = False


class Rates(_Record, frozen=True, tag="rates"):
    pass


class TurnStarted(_Record, frozen=True, tag="turn-started"):
    turn: Count


class TextDelta(_Record, frozen=True, tag="text-delta"):
    text: str


class ReasoningDelta(_Record, frozen=True, tag="reasoning-delta"):
    text: str


class ToolArgumentsDelta(_Record, frozen=True, tag="tool-arguments-delta"):
    pass


class TurnRetried(_Record, frozen=True, tag="turn-retried"):
    turn: Count
    attempt: Count
    reason: str


class Compacted(_Record, frozen=True, tag="compacted"):
    elided_results: Count | None = None
    elided_bytes: Count | None = None
    summarised_items: Count | None = None
    bytes_before: Count | None = None
    bytes_after: Count | None = None


class Usage(_Record, frozen=True, tag="usage"):
    model: str | None = None
    input_tokens: Count | None = None
    output_tokens: Count | None = None
    cached_input_tokens: Count | None = None
    cache_creation_input_tokens: Count | None = None


class Cost(_Record, frozen=True, tag="cost"):
    micro_usd: Count


class ToolRequested(_Record, frozen=True, tag="tool-requested"):
    call_id: str
    name: str
    arguments: Any = None


class ApprovalRequired(_Record, frozen=True, tag="approval-required"):
    call_id: str
    name: str = ""


class ApprovalResolved(_Record, frozen=True, tag="approval-resolved"):
    call_id: str
    approved: bool


class ToolCompleted(_Record, frozen=True, tag="tool-completed"):
    call_id: str
    failed: bool


class Warning(_Record, frozen=True, tag="warning"):
    code: str
    message: str


class Answered(_Record, frozen=True, tag="answered"):
    value: Any = None


class HookRan(_Record, frozen=True, tag="hook-ran"):
    decision: str
    reason: str | None = None
    program: str | None = None


class Finished(_Record, frozen=True, tag="finished"):
    stop: Any = None
    turns: int | None = None


class RefusedLine(_Record, frozen=True, tag="refused"):
    reason: str


class Session(_Record, frozen=True, tag="session"):
    id: str
    path: str


Record: TypeAlias = (
    Started
    | CredentialRenewed
    | Rates
    | TurnStarted
    | TextDelta
    | ReasoningDelta
    | ToolArgumentsDelta
    | TurnRetried
    | Compacted
    | Usage
    | Cost
    | ToolRequested
    | ApprovalRequired
    | ApprovalResolved
    | ToolCompleted
    | Warning
    | Answered
    | HookRan
    | Finished
    | RefusedLine
    | Session
)

_DECODER = msgspec.json.Decoder(Record)
_ANY = msgspec.json.Decoder()


def read_record(line: bytes) -> Record | str | None:
    """The typed record of one line; else its ``kind`` when it is an object with a string ``kind``
    (an unknown or malformed record); else ``None`` (not a JSON object, no string ``kind``, or nested
    past ``JSON_DEPTH_LIMIT``)."""
    if len(line) > JSON_DEPTH_LIMIT and too_deep(line):
        return None
    try:
        return _DECODER.decode(line)
    except msgspec.DecodeError:
        pass
    try:
        raw = _ANY.decode(line)
    except msgspec.DecodeError:
        return None
    kind = raw.get("kind") if isinstance(raw, dict) else None
    return kind if isinstance(kind, str) else None
