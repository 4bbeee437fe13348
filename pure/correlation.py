"""One ``tool.requested`` per call: the correlator that merges what a vendor record yields with the
calls the hook channel delivers (docs/adapters/common.md#vendor-decisions), for claude and codex alike.

* **Record first** — an announced call, and every later reading, is held until the hook delivers the
  same id (the call is then presented on seam ``hook``) or its result or the terminal record arrives
  (it is emitted as recorded, seam ``none``, with ``warning COVERAGE_GAP``).
* **Seam first** — a hook call is presented at once; the record's later announcement emits nothing.
* **Replay** — every call is emitted as recorded, with no warning.

``Present`` asks the run to decide a call on the hook seam.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TypeVar

import msgspec
from immutables import Map

from metaharness.pure.events import SessionEnded, Stream, TurnEnded, WarningRaised, drained
from metaharness.pure.hook_channel import HookCall
from metaharness.pure.readings import Announced, Emitted, Finished, Reading, replay_written
from metaharness.pure.run_stages import closing_reason
from metaharness.pure.stream_writer import replay_ending


class Present(msgspec.Struct, frozen=True):
    """A call the hook delivered, to be decided on seam ``hook``."""

    call: HookCall


Output = Emitted | Present


class _Held(msgspec.Struct, frozen=True):
    """A held reading; an announced call also carries how it was resolved (``""`` while open)."""

    reading: Reading
    resolution: str = ""


class Correlator(msgspec.Struct, frozen=True, kw_only=True):
    """The state between readings and hook calls. ``live`` is false under ``replay``. The readings held are
    numbered from ``first`` (the next to release) to ``end`` (the next to hold), and ``open`` gives each call id
    the numbers of its announcements still open, so holding, resolving and releasing one costs the same however
    many are held (docs/DEVELOPING.md#rules-for-pure)."""

    live: bool
    held: Map[int, _Held] = Map()
    first: int = 0
    end: int = 0
    open: Map[str, Map[int, bool]] = Map()
    presented: Map[str, bool] = Map()
    """The calls the hook delivered, a set as a persistent map."""


def coverage_gap(call_id: str, name: str) -> WarningRaised:
    """``COVERAGE_GAP`` for a call no seam delivered before it ran (docs/adapters/common.md#one-event-per-call (b))."""
    return WarningRaised(
        code="COVERAGE_GAP",
        message=f"{name} call {call_id} reached no decision seam before its result: the hook did not deliver it, "
        "so it is recorded and was not decided",
    )


def _released(item: _Held) -> tuple[Output, ...]:
    reading = item.reading
    if isinstance(reading, Announced):
        if item.resolution == "hook":
            return ()
        emitted: tuple[Output, ...] = (Emitted(reading.requested, reading.at),)
        if item.resolution == "gap":
            emitted += (Emitted(coverage_gap(reading.call_id, reading.requested.name), reading.at),)
        return emitted
    if isinstance(reading, Finished):
        warning = () if reading.warning is None else (Emitted(reading.warning, reading.at),)
        return (Emitted(reading.result, reading.at), *warning)
    return (reading,)


def _drain(correlator: Correlator) -> tuple[Correlator, tuple[Output, ...]]:
    """Release held readings from the front until an open announced call."""
    out: list[Output] = []
    held, first = correlator.held, correlator.first
    while first < correlator.end and not _is_open(held[first]):
        out.extend(_released(held[first]))
        held, first = held.delete(first), first + 1
    return msgspec.structs.replace(correlator, held=held, first=first), tuple(out)


def _is_open(item: _Held) -> bool:
    return isinstance(item.reading, Announced) and item.resolution == ""


def _hold(correlator: Correlator, reading: Reading) -> Correlator:
    """``reading`` held last; an announced call is open until it is resolved."""
    number, opened = correlator.end, correlator.open
    if isinstance(reading, Announced):
        opened = opened.set(reading.call_id, opened.get(reading.call_id, Map()).set(number, True))
    held = correlator.held.set(number, _Held(reading))
    return msgspec.structs.replace(correlator, held=held, end=number + 1, open=opened)


def _resolve(correlator: Correlator, call_id: str | None, resolution: str) -> Correlator:
    """Mark open announced calls (those of ``call_id``, or all when ``None``) resolved."""
    opened = correlator.open
    ids = tuple(opened) if call_id is None else (call_id,) if call_id in opened else ()
    held = correlator.held
    for one in ids:
        for number in opened[one]:
            held = held.set(number, _Held(held[number].reading, resolution))
        opened = opened.delete(one)
    return msgspec.structs.replace(correlator, held=held, open=opened)


def on_readings(correlator: Correlator, readings: tuple[Reading, ...]) -> tuple[Correlator, tuple[Output, ...]]:
    """Fold what one rollout line yielded into the correlator; return what may be written now."""
    out: list[Output] = []
    for reading in readings:
        if isinstance(reading, Announced):
            if reading.call_id in correlator.presented:
                continue
            if not correlator.live:
                out.append(Emitted(reading.requested, reading.at))
                continue
        elif correlator.first == correlator.end:
            out.extend(_released(_Held(reading)))
            continue
        correlator = _hold(correlator, reading)
        if isinstance(reading, Finished):
            correlator = _resolve(correlator, reading.call_id, "gap")
        elif isinstance(reading, Emitted) and isinstance(reading.payload, TurnEnded):
            correlator = _resolve(correlator, None, "gap")
        correlator, released = _drain(correlator)
        out.extend(released)
    return correlator, tuple(out)


def on_hook_call(correlator: Correlator, call: HookCall) -> tuple[Correlator, tuple[Output, ...]]:
    """A call the hook delivered: presented at once; a held announcement of the same id emits nothing."""
    correlator = _resolve(correlator, call.call_id, "hook")
    correlator = msgspec.structs.replace(correlator, presented=correlator.presented.set(call.call_id, True))
    correlator, released = _drain(correlator)
    return correlator, (Present(call), *released)


def on_stream_end(correlator: Correlator) -> tuple[Correlator, tuple[Output, ...]]:
    """At stream end every still-held call takes path (b) of docs/adapters/common.md#one-event-per-call."""
    return _drain(_resolve(correlator, None, "gap"))


State = TypeVar("State")


def correlated_stream(
    run: str, lines: Iterable[tuple[int, bytes]], state: State,
    read: Callable[[State, bytes, int], tuple[State, tuple[Reading, ...]]],
    stop: Callable[[SessionEnded | None], str | None], budget_stops: Collection[str],
) -> Iterator[bytes]:  # fmt: skip
    """A vendor record replayed (docs/events.md#replay): each numbered line (``\\r`` removed) read by ``read``
    through the replay correlator, each event line yielded once the line that makes it is read, then the
    ending, its reason from ``stop`` (the terminal record's stop word) and ``budget_stops``."""
    stream = Stream(run)
    correlator = Correlator(live=False)
    out = bytearray()
    ended: SessionEnded | None = None
    for number, raw in lines:
        state, readings = read(state, raw.removesuffix(b"\r"), number)
        correlator, outputs = on_readings(correlator, readings)
        stream, seen = replay_written(stream, outputs, out)
        ended = ended or seen
        if out:
            yield bytes(out)
            out.clear()
    correlator, outputs = on_stream_end(correlator)
    stream, seen = replay_written(stream, outputs, out)
    ended = ended or seen
    yield from drained(out)
    yield replay_ending(stream, closing_reason(halted=False, killed=False, stop=stop(ended), budget_stops=budget_stops))
