"""The bounded SSE framer, sans-I/O (spec 60 §7.2).

Lines end ``\\n``, ``\\r\\n`` or ``\\r``; a blank line ends an event; ``data:`` values (one leading space
dropped) join with ``\\n``; comments, ``event:``, ``id:``, ``retry:`` are ignored. Bytes come in as any
chunking; the framer yields the same frames for every chunking of the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import msgspec

EVENT_CAP = 1 << 20
STREAM_CAP = 32 << 20

_LINE_BREAK = re.compile(rb"\r\n|\r|\n")


class SseFrame(msgspec.Struct, frozen=True):
    """One event's joined ``data`` payload."""

    data: str


class SseEnd(msgspec.Struct, frozen=True):
    """The byte stream ended; ``partial`` when it ended inside an event."""

    partial: bool


class SseBroken(msgspec.Struct, frozen=True):
    """The stream broke a bound or was not UTF-8: a protocol error."""

    message: str


SseItem = SseFrame | SseEnd | SseBroken


def frame_sse(chunks: Iterable[bytes], event_cap: int = EVENT_CAP, stream_cap: int = STREAM_CAP) -> Iterator[SseItem]:
    """Frames of ``chunks``; ends with exactly one ``SseEnd`` or ``SseBroken``."""
    buffer = b""
    skip_lf = False
    data: list[bytes] = []
    event_bytes = 0
    stream_bytes = 0
    for chunk in chunks:
        if not chunk:
            continue
        stream_bytes += len(chunk)
        if stream_bytes > stream_cap:
            yield SseBroken(f"the stream is over the {stream_cap} byte bound")
            return
        if skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        skip_lf = False
        buffer = buffer + chunk if buffer else chunk
        start = 0
        for match in _LINE_BREAK.finditer(buffer):
            line = buffer[start : match.start()]
            start = match.end()
            event_bytes += start - match.start() + len(line)
            if event_bytes > event_cap:
                yield SseBroken(f"an event is over the {event_cap} byte bound")
                return
            if not line:
                if data:
                    frame = _frame(data)
                    if frame is None:
                        yield SseBroken("an event is not UTF-8")
                        return
                    yield frame
                    data = []
                event_bytes = 0
                continue
            if line.startswith(b"data"):
                value = _data_value(line)
                if value is not None:
                    data.append(value)
        buffer = buffer[start:]
        if start and buffer == b"" and _ends_with_cr(chunk):
            skip_lf = True
        if event_bytes + len(buffer) > event_cap:
            yield SseBroken(f"an event is over the {event_cap} byte bound")
            return
    yield SseEnd(partial=bool(data or buffer))


def _ends_with_cr(chunk: bytes) -> bool:
    return chunk[-1:] == b"\r"


def _data_value(line: bytes) -> bytes | None:
    """The value of a ``data`` field line, or ``None`` when the field is another one (``datax:``)."""
    if line == b"data":
        return b""
    if line[4:5] != b":":
        return None
    value = line[5:]
    return value[1:] if value[:1] == b" " else value


def _frame(data: list[bytes]) -> SseFrame | None:
    try:
        return SseFrame(b"\n".join(data).decode("utf-8"))
    except UnicodeDecodeError:
        return None
