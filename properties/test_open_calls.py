"""A stream's open calls (docs/events.md#stream-ending, ``RESULT_UNOBSERVED``): kept in a persistent map so a call
is noted at the same cost however many are open, they read back exactly as the list of docs/events.md keeps them —
each call once, in the order of its first ``tool.requested`` since it was last ended."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.events import (
    Event,
    Stream,
    Text,
    ToolRequested,
    ToolResult,
    note,
    note_each,
    open_calls,
    result_unobserved,
)


def _requested(call_id: str) -> ToolRequested:
    return ToolRequested(call_id=call_id, name="Bash", input={}, decision_required=False, deadline_ms=None, seam="none")


def _result(call_id: str) -> ToolResult:
    return ToolResult(exit_code=None, outcome_source=None, call_id=call_id, is_error=None, content=None, bytes=None,
                      tool_use_result=None)  # fmt: skip


EVENTS = st.lists(
    st.one_of(
        st.sampled_from("abcdef").map(_requested),
        st.sampled_from("abcdef").map(_result),
        st.just(Text(text="t", request_id=None)),
    ),
    max_size=40,
)


def _listed(payloads: list[Event]) -> tuple[str, ...]:
    """The reference: a list of open calls, appended at a first request, removed at a result."""
    unended: list[str] = []
    for payload in payloads:
        if isinstance(payload, ToolRequested) and payload.call_id not in unended:
            unended.append(payload.call_id)
        elif isinstance(payload, ToolResult) and payload.call_id in unended:
            unended.remove(payload.call_id)
    return tuple(unended)


@settings(max_examples=300)
@given(EVENTS, st.integers(1, 5))
def test_open_calls_read_back_in_request_order_noted_one_by_one_or_in_chunks(payloads: list[Event], chunk: int) -> None:
    one_by_one = Stream("r")
    for payload in payloads:
        one_by_one, _ = note(one_by_one, payload)
    chunked = Stream("r")
    for start in range(0, len(payloads), chunk):
        chunked, _ = note_each(chunked, payloads[start : start + chunk])
    assert open_calls(one_by_one) == open_calls(chunked) == _listed(payloads)
    warning = result_unobserved(one_by_one)
    assert (warning is None) == (not _listed(payloads))
    if warning is not None:
        assert warning.message.startswith(f"no result was observed for {', '.join(_listed(payloads))}: ")
