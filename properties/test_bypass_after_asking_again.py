"""A denied call's deny lasts the whole stream, except where the embedder allows (or replaces) the very input it denied
when the call is asked again (pure/stream_amendment.py; docs/decisions.md#correlation-and-abandonment):
whatever other calls come between, a success after an embedder's allow of another input is always
``DECISION_BYPASSED`` (no laundering), and one after an allow of the same input never is."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from metaharness.pure.events import (
    Allow,
    Deny,
    Event,
    EventValue,
    Replace,
    Stream,
    ToolDecided,
    ToolRequested,
    ToolResult,
    WarningRaised,
)
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write

DENIED = {"command": "rm -rf x"}


def requested(call_id: str, value: Any) -> ToolRequested:
    return ToolRequested(call_id=call_id, name="Bash", input=value, decision_required=True, deadline_ms=1, seam="hook")


def decided(call_id: str, allowed: bool, by: str = "embedder", replaced: bool = False) -> ToolDecided:
    decision = (Replace({"command": "true"}) if replaced else Allow()) if allowed else Deny("no")
    return ToolDecided(call_id=call_id, decision=decision, decided_by=by, seam="hook", latency_ms=1)


def result(call_id: str, failed: bool) -> ToolResult:
    return ToolResult(call_id=call_id, is_error=failed, exit_code=None, outcome_source=None, content=None, bytes=None,
                      tool_use_result=None)  # fmt: skip


OTHERS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.booleans(), st.booleans()).map(
        lambda t: (requested(t[0], {"command": t[0]}), decided(t[0], t[1]), result(t[0], t[2]))
    ),
    max_size=6,
).map(lambda calls: [event for call in calls for event in call])
"""Other calls, each requested, decided and ended, between the deny and the call asked again."""


def bypasses(events: list[Event]) -> list[str]:
    writer, codes = StreamWriter(Stream("r"), Amendment()), []
    for event in events:
        writer, lines = write(writer, EventValue(event))
        codes += [line.line.payload.message for line in lines if isinstance(line.line.payload, WarningRaised)]
    return [message for message in codes if "call w," in message]


@given(OTHERS, st.sampled_from([{"command": "echo harmless"}, {"command": "rm -rf y"}]), st.sampled_from(["embedder", "frame"]),
       st.booleans())
def test_an_allow_of_another_input_never_launders_the_deny(between: list[Event], other: dict[str, str], by: str,
                                                           replaced: bool) -> None:
    events = [requested("w", DENIED), decided("w", False), *between, requested("w", other),
              decided("w", True, by, replaced), result("w", False)]  # fmt: skip
    assert len(bypasses(events)) == 1


@given(OTHERS, st.sampled_from(["embedder", "frame"]), st.booleans())
def test_only_the_embedder_s_allow_of_the_denied_input_lifts_the_deny(between: list[Event], by: str, replaced: bool) -> None:
    events = [requested("w", DENIED), decided("w", False), result("w", True), *between, requested("w", DENIED),
              decided("w", True, by, replaced), result("w", False)]  # fmt: skip
    assert len(bypasses(events)) == (0 if by == "embedder" else 1)
