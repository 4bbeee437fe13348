"""A run's outcome is the worst of what the record, the child's exit and the route say (docs/events.md#stream-ending),
the same on every kind: ``run_outcome`` and the amendment that writes it into the closing marker."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from metaharness.pure.events import (
    Census,
    EventValue,
    Exited,
    Process,
    RouteTraffic,
    SessionEnded,
    Signaled,
    Stream,
    StreamClosed,
    UnknownProcess,
    WarningRaised,
)
from metaharness.pure.run_stages import run_outcome
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write

REASONS = st.sampled_from(["completed", "error", "budget", "killed", "steer-halt"])
PROCESSES: st.SearchStrategy[Process] = st.one_of(
    st.builds(Exited, st.integers(0, 255)), st.builds(Signaled, st.integers(1, 64)), st.just(UnknownProcess())
)
ROUTES = st.none() | st.builds(RouteTraffic, requests=st.integers(0, 3), bytes_up=st.integers(0, 9),
                               bytes_down=st.integers(0, 9))  # fmt: skip
ORDER = {"completed": 0, "budget": 1, "error": 1, "killed": 1, "steer-halt": 1}


@given(REASONS, PROCESSES, ROUTES)
def test_the_outcome_is_never_better_than_any_witness(
    record: str, process: Process, route: RouteTraffic | None
) -> None:
    outcome = run_outcome(record, process, route)
    assert ORDER[outcome.reason] >= ORDER[record]
    if record != "completed":
        assert outcome.reason == record and outcome.overruled is None
    failed_exit = isinstance(process, Exited) and process.code != 0
    silent_route = route is not None and route.requests == 0
    assert (outcome.reason == "completed") == (record == "completed" and not failed_exit and not silent_route)
    assert (outcome.overruled is not None) == (outcome.reason != record)


def ended() -> SessionEnded:
    census = Census(allowed=0, denied=0, replaced=0, abstained=0, by_seam={}, by_decider={})
    fields = dict.fromkeys(
        ("final_answer", "observed_models", "subtype", "stop_reason", "terminal_reason", "api_error_status", "num_turns",
         "duration_ms", "duration_api_ms", "ttft_ms", "time_to_request_ms", "total_cost_usd", "permission_denials",
         "subagents_spawned", "usage", "model_usage"),
    )  # fmt: skip
    return SessionEnded(is_error=False, census=census, **fields)


@given(PROCESSES, ROUTES, st.integers(0, 3))
def test_the_amended_closing_marker_closes_the_outcome(
    process: Process, route: RouteTraffic | None, lines: int
) -> None:
    """Whatever the exit and the route, the written stream closes with ``run_outcome``'s reason, ``RUN_FAILED`` comes
    directly before the marker exactly when the record's word was overruled, and the marker counts every line."""
    writer, written = write(StreamWriter(Stream("r"), Amendment()), EventValue(ended()), route)
    for _ in range(lines):
        writer, out = write(writer, EventValue(WarningRaised(code="COVERAGE_GAP", message="m")))
        written += out
    closed = StreamClosed(events=lines + 1, reason="completed", run_id="r", process=process)
    writer, out = write(writer, EventValue(closed))
    events = [json.loads(line.encoded) for line in (*written, *out)]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    expected = run_outcome("completed", process, route)
    assert events[-1]["reason"] == expected.reason and events[-1]["events"] == len(events) - 1
    failed = [e for e in events if e.get("code") == "RUN_FAILED"]
    assert failed == ([events[-2]] if expected.overruled is not None else [])
