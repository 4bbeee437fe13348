"""The decision census (docs/events.md#census).

``session.ended.census`` counts every ``tool.decided`` emitted before that line: by the decision's
kind, and keyed by ``seam`` and ``decided_by`` (keys only with a non-zero count, sorted). Calls that
were recorded and never decided are not counted. A reader that finds no ``session.ended`` recomputes
the census from all ``tool.decided`` lines of the stream by the same rule (``stream_census``).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from metaharness.pure.events import (
    Abstain,
    Allow,
    Census,
    Deny,
    Event,
    Replace,
    SessionEnded,
    ToolDecided,
    WarningRaised,
)

ZERO_CENSUS = Census(allowed=0, denied=0, replaced=0, abstained=0, by_seam={}, by_decider={})
"""The census of a run with no decision (docs/events.md#census)."""


def _bumped(counts: dict[str, int], key: str) -> dict[str, int]:
    return dict(sorted({**counts, key: counts.get(key, 0) + 1}.items()))


def count_decision(census: Census, decided: ToolDecided) -> Census:
    """``census`` with one more decision counted (docs/events.md#census)."""
    decision = decided.decision
    return Census(
        allowed=census.allowed + isinstance(decision, Allow),
        denied=census.denied + isinstance(decision, Deny),
        replaced=census.replaced + isinstance(decision, Replace),
        abstained=census.abstained + isinstance(decision, Abstain),
        by_seam=_bumped(census.by_seam, decided.seam),
        by_decider=_bumped(census.by_decider, decided.decided_by),
    )


def recount_census(payloads: Iterable[Event]) -> Census:
    """The census recomputed from every ``tool.decided`` among ``payloads`` (docs/events.md#census)."""
    census = ZERO_CENSUS
    for payload in payloads:
        if isinstance(payload, ToolDecided):
            census = count_decision(census, payload)
    return census


def stream_census(payloads: Iterable[Event]) -> Census:
    """A reader's census of a stream: the last ``session.ended``'s own census when the stream has one,
    else recomputed from all its ``tool.decided`` lines; a ``DECISION_BYPASSED`` written after that
    ``session.ended`` (or in a stream without one) is counted in ``bypassed`` too (docs/events.md#census)."""
    events = tuple(payloads)
    ends = [index for index, payload in enumerate(events) if isinstance(payload, SessionEnded)]
    start = ends[-1] + 1 if ends else 0
    ended = events[start - 1] if ends else None
    census = ended.census if isinstance(ended, SessionEnded) else recount_census(events)
    later = sum(1 for payload in events[start:] if _bypass(payload))
    if not later:
        return census
    counted = 0 if isinstance(census.bypassed, msgspec.UnsetType) else census.bypassed
    return msgspec.structs.replace(census, bypassed=counted + later)


def _bypass(payload: Event) -> bool:
    return isinstance(payload, WarningRaised) and payload.code == "DECISION_BYPASSED"


def counted(census: Census, ended: SessionEnded | None, payload: Event) -> tuple[Census, SessionEnded | None, Event]:
    """One event as a live session writes it (docs/events.md#census): a ``tool.decided`` counted, a ``session.ended``
    given the census so far (and kept as the session's end); the census, the end and the event to note."""
    if isinstance(payload, ToolDecided):
        census = count_decision(census, payload)
    if isinstance(payload, SessionEnded):
        payload = ended = msgspec.structs.replace(payload, census=census)
    return census, ended, payload
