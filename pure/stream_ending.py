"""How a stream ended, read from its closing markers (docs/events.md#stream-ending): the one rule both the
projection and the run view apply, kept in a leaf so a run's terminal view does not load the projection."""

from __future__ import annotations

from collections.abc import Sequence


def stream_completeness(events: int, markers: Sequence[tuple[int, int]]) -> str:
    """``complete``, ``inconsistent`` or ``truncated`` by docs/events.md#stream-ending: ``events`` is the number of
    events read, ``markers`` each ``stream.closed`` as (0-based position, its ``events`` count)."""
    if not markers:
        return "truncated"
    position, counted = markers[0]
    if len(markers) > 1 or position != events - 1 or counted != position:
        return "inconsistent"
    return "complete"
