"""The one writer of a ``metaharness.event/1`` stream (docs/events.md#framing-keys, #serialisation,
docs/DEVELOPING.md#the-event-path): sessions and record readers emit event values
(``metaharness.pure.events.EventValue``); the writer numbers each line (``seq`` 1, then +1 per line, no gaps)
and encodes it with ``encode_event`` once. A live run's writer first amends each value
(``metaharness.pure.stream_amendment``), so what metaharness adds is numbered in place and ``stream.closed``
counts every line before it; a replay's and a conformance vector's writer amends nothing.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from metaharness.pure.events import (
    Event,
    EventLine,
    EventValue,
    RouteTraffic,
    RowCheck,
    Stream,
    StreamClosed,
    UnknownProcess,
    advanced,
    closing_marker,
    encode_event,
    result_unobserved,
)
from metaharness.pure.stream_amendment import Amendment, amend
from metaharness.pure.witness import RouteAccount


def write_line(stream: Stream, value: EventValue) -> tuple[Stream, bytes]:
    """``value`` numbered as the next line of ``stream`` and encoded, nothing amended."""
    return written_line(stream, value.payload, value.at)


def written_line(stream: Stream, payload: Event, at: str | UnsetType = UNSET) -> tuple[Stream, bytes]:
    """``write_line`` of the value ``payload`` dated ``at``, for a replay that holds the parts and builds no
    ``EventValue`` for each (docs/DEVELOPING.md#the-event-path)."""
    stream = advanced(stream, payload)
    return stream, encode_event(stream.written, stream.run, payload, at)


def numbered_line(written: int, run: str, value: EventValue) -> bytes:
    """``value`` encoded as the line after ``written`` others of run ``run``, nothing amended and no call noted: the
    writer of a replay whose reader counts the stream itself (b10x's seam notes every event it emits, so the
    replay keeps only the line count; docs/DEVELOPING.md#the-event-path)."""
    return encode_event(written + 1, run, value.payload, value.at)


def replay_ending(stream: Stream, reason: str) -> bytes:
    """What a claude or codex replay writes last: ``RESULT_UNOBSERVED`` for the calls that got no result,
    then the closing marker with the process unknown (docs/events.md#replay)."""
    out = b""
    unobserved = result_unobserved(stream)
    if unobserved is not None:
        stream, out = write_line(stream, EventValue(unobserved))
    return out + write_line(stream, EventValue(closing_marker(stream, reason, UnknownProcess())))[1]


class StreamWriter(msgspec.Struct, frozen=True):
    """A live run's writer: the lines written so far and the amendment's state."""

    stream: Stream
    amendment: Amendment


class Written(msgspec.Struct, frozen=True):
    """One line as written: its value with its framing keys, and its bytes."""

    line: EventLine
    encoded: bytes


def write(
    writer: StreamWriter,
    value: EventValue,
    route: RouteTraffic | None = None,
    account: RouteAccount | None = None,
    rows: tuple[RowCheck, ...] | None = None,
) -> tuple[StreamWriter, tuple[Written, ...]]:
    """The lines ``value`` becomes once amended (``route``, ``account`` and ``rows`` as
    ``metaharness.pure.stream_amendment.amend`` takes them), numbered and encoded; ``stream.closed`` counts the
    lines before it."""
    amendment, values = amend(writer.amendment, value, route, account, rows)
    stream = writer.stream
    lines: list[Written] = []
    for amended in values:
        payload = amended.payload
        if isinstance(payload, StreamClosed):
            payload = msgspec.structs.replace(payload, events=stream.written)
        stream = advanced(stream, payload)
        line = EventLine(seq=stream.written, run=stream.run, at=amended.at, payload=payload)
        lines.append(Written(line, encode_event(line.seq, line.run, payload, line.at)))
    return StreamWriter(stream, amendment), tuple(lines)
