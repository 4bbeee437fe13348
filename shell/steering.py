"""Steering lines on metaharness's stdin and the deadlines of asked calls, as every kind's live loop
reads and keeps them (docs/events.md#commands; docs/decisions.md#deadlines)."""

from __future__ import annotations

import time
from collections.abc import Callable

from returns.result import Failure

from metaharness.pure.commands import Steering, read_command, steering_refusal, unreadable_command


def steering_command(line: bytes, on_refusal: Callable[[str], None]) -> Steering | None:
    """One ``metaharness.command/1`` line read; a line framing refuses is reported on stderr and is
    ``None``, or, when it carries a string ``id``, still answered as an :class:`UnreadableCommand`."""
    stripped = line.rstrip(b"\r\n")
    framed = read_command(stripped)
    if isinstance(framed, Failure):
        on_refusal(steering_refusal(framed.failure()))
        return unreadable_command(stripped, framed.failure())
    return framed.unwrap()


class Deadlines:
    """When each asked call was armed, on the monotonic clock, against the run's deadline."""

    def __init__(self, deadline_ms: int) -> None:
        self.deadline_s = deadline_ms / 1000
        self.started: dict[str, float] = {}

    def arm(self, call_id: str) -> None:
        self.started[call_id] = time.monotonic()

    def disarm(self, call_id: str) -> None:
        self.started.pop(call_id, None)

    def latency_ms(self, command: object) -> int | None:
        """How long the call a command names has waited, or ``None`` when it names no armed call."""
        call_id = getattr(command, "call_id", None)
        start = self.started.get(call_id) if isinstance(call_id, str) else None
        return None if start is None else int((time.monotonic() - start) * 1000)

    def next_at(self) -> float | None:
        """The earliest moment a call falls due, or ``None`` when none is armed."""
        return min((start + self.deadline_s for start in self.started.values()), default=None)

    def take_due(self) -> list[tuple[str, int]]:
        """The calls now due, disarmed, each with the milliseconds it waited."""
        now = time.monotonic()
        due = [(call_id, start) for call_id, start in self.started.items() if now >= start + self.deadline_s]
        for call_id, _ in due:
            del self.started[call_id]
        return [(call_id, int((now - start) * 1000)) for call_id, start in due]
