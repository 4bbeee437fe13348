"""What the properties share: a session's effects as the stream's one writer writes them (docs/DEVELOPING.md#the-event-path)."""

from __future__ import annotations

from metaharness.pure.events import EventValue, Stream
from metaharness.pure.stream_writer import write_line


def written(run: str, effects: list[object]) -> list[bytes]:
    """The event values among ``effects`` as the stream's writer writes them (nothing amended)."""
    stream, lines = Stream(run), []
    for effect in effects:
        if isinstance(effect, EventValue):
            stream, line = write_line(stream, effect)
            lines.append(line)
    return lines
