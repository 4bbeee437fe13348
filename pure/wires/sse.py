"""The bounded SSE framer, sans-I/O (docs/loop.md#transport).

Lines end ``\\n``, ``\\r\\n`` or ``\\r``; a blank line ends an event; ``data:`` values (one leading space
dropped) join with ``\\n``; comments, ``event:``, ``id:``, ``retry:`` are ignored. Bytes come in as any
chunking; the framer yields the same frames for every chunking of the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

EVENT_CAP = 1 << 20
STREAM_CAP = 32 << 20

class SseFrame(msgspec.Struct, frozen=True):
    """One event's joined ``data`` payload, as bytes (the wire decodes JSON straight from them)."""

    data: bytes


class SseEnd(msgspec.Struct, frozen=True):
    """The byte stream ended; ``partial`` when it ended inside an event."""

    partial: bool


class SseBroken(msgspec.Struct, frozen=True):
    """The stream broke a bound: a protocol error."""

    message: str


SseItem = SseFrame | SseEnd | SseBroken


def frame_sse(chunks: Iterable[bytes], event_cap: int = EVENT_CAP, stream_cap: int = STREAM_CAP) -> Iterator[SseItem]:
    """Frames of ``chunks``; ends with exactly one ``SseEnd`` or ``SseBroken``.

    Each chunk's line ends are normalised to ``\\n`` (a ``\\r`` closing a chunk also swallows a ``\\n``
    opening the next), then complete lines are read; the unterminated tail waits for more bytes.
    """
    tail = b""
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
        if b"\r" in chunk:
            skip_lf = chunk[-1:] == b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        last = chunk.rfind(b"\n")
        if last < 0:
            tail += chunk
            if event_bytes + len(tail) > event_cap:
                yield SseBroken(f"an event is over the {event_cap} byte bound")
                return
            continue
        lines = (tail + chunk[:last]).split(b"\n") if tail else chunk[:last].split(b"\n")
        tail = chunk[last + 1 :]
        for line in lines:
            if line:
                event_bytes += len(line) + 1
                if event_bytes > event_cap:
                    yield SseBroken(f"an event is over the {event_cap} byte bound")
                    return
                if line[:4] == b"data":
                    if line[4:6] == b": ":
                        data.append(line[6:])
                    elif line[4:5] == b":":
                        data.append(line[5:])
                    elif len(line) == 4:
                        data.append(b"")
                continue
            event_bytes = 0
            if data:
                yield SseFrame(data[0] if len(data) == 1 else b"\n".join(data))
                data = []
        if event_bytes + len(tail) > event_cap:
            yield SseBroken(f"an event is over the {event_cap} byte bound")
            return
    yield SseEnd(partial=bool(data or tail))


