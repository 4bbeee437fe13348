"""What a vendor record reader yields, line by line, before the correlator decides which seam a call
is presented on (docs/adapters/common.md#vendor-decisions): an event as it stands, a call the record announces, a
call's result.

The codex rollout reader and the claude stream-json reader both yield these; the correlator
(``metaharness.pure.correlation``) folds them with the hook channel's calls.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from metaharness.pure.census import ZERO_CENSUS
from metaharness.pure.events import Event, SessionEnded, Stream, ToolRequested, ToolResult, WarningRaised
from metaharness.pure.stream_writer import written_line


class Emitted(msgspec.Struct, frozen=True):
    """An event the record yields as it stands; ``at`` is the line's ``timestamp`` verbatim."""

    payload: Event
    at: str | UnsetType = UNSET


class Announced(msgspec.Struct, frozen=True, gc=False):
    """A ``function_call``/``custom_tool_call``: the call as recorded, its ``tool.requested`` on seam none; untracked
    by the cyclic collector, so the correlator holding it behind an open call walks none (docs/DEVELOPING.md#untracked-state)."""

    call_id: str
    requested: ToolRequested
    at: str | UnsetType = UNSET


class Finished(msgspec.Struct, frozen=True, gc=False):
    """A call's output record and its ``tool.result``, plus any ``TOOL_OUTCOME_UNVERIFIED`` warning; untracked by
    the cyclic collector (docs/DEVELOPING.md#untracked-state)."""

    call_id: str
    result: ToolResult
    at: str | UnsetType = UNSET
    warning: WarningRaised | None = None


Reading = Emitted | Announced | Finished


def stated_count(value: Any) -> int | None:
    """A count a record states (tokens, turns, milliseconds): an integer ≥ 0, else unknown (``None``),
    so a negative one never passes into an event."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def stated_amount(value: Any) -> float | None:
    """An amount a record states (dollars, a utilisation): a finite number ≥ 0, else unknown."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def replay_written(stream: Stream, outputs: Iterable[object], out: bytearray) -> tuple[Stream, SessionEnded | None]:
    """A replay's emitted events written onto ``stream`` (``metaharness.pure.stream_writer.written_line``) and appended to ``out``, ``session.ended`` with a zero
    census (nothing is decided offline, docs/events.md#replay); the ``session.ended`` written, if one was."""
    ended: SessionEnded | None = None
    for item in outputs:
        if isinstance(item, Emitted):
            payload = item.payload
            if isinstance(payload, SessionEnded):
                ended = payload = msgspec.structs.replace(payload, census=ZERO_CENSUS)
            stream, line = written_line(stream, payload, item.at)
            out += line
    return stream, ended


def record_lines(record: bytes) -> tuple[bytes, ...]:
    """The complete lines of a vendor record, terminators (``\\n``, ``\\r\\n``) removed; an unterminated last
    line counts too."""
    lines = record.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return tuple(line[:-1] if line.endswith(b"\r") else line for line in lines)
