"""The decision census, counted as the desk decides and recomputed by a reader (docs/events.md#census)."""

from __future__ import annotations

import msgspec

from metaharness.pure.census import ZERO_CENSUS, count_decision, recount_census, stream_census
from metaharness.pure.events import (
    Abstain,
    Allow,
    Census,
    Deny,
    Replace,
    SessionEnded,
    ToolDecided,
    WarningRaised,
    read_event,
)

SPEC_SESSION_ENDED = (
    b'{"format":"metaharness.event/1","seq":14,"run":"b10x-48213","event":"session.ended","final_answer":{"text":"that is what '
    b'the tool said","turn_id":null},"observed_models":null,"is_error":false,"subtype":"completed","stop_reason":null,'
    b'"terminal_reason":"completed","api_error_status":null,"num_turns":2,"duration_ms":null,"duration_api_ms":null,'
    b'"ttft_ms":null,"time_to_request_ms":null,"total_cost_usd":null,"permission_denials":[],"subagents_spawned":0,'
    b'"usage":null,"model_usage":null,"census":{"allowed":0,"denied":1,"replaced":0,"abstained":0,'
    b'"by_seam":{"control_request":1},"by_decider":{"frame":1}}}'
)


def decided(decision: object, decided_by: str, seam: str) -> ToolDecided:
    return ToolDecided(call_id="c", decision=decision, decided_by=decided_by, seam=seam, latency_ms=None)


DECISIONS = (
    decided(Allow(), "observe", "hook"),
    decided(Deny("no"), "frame", "control_request"),
    decided(Abstain(), "adapter", "none"),
    decided(Replace({"a": 1}), "embedder", "owned_tool"),
    decided(Deny("late"), "deadline", "control_request"),
)


def test_a_run_with_no_decision_writes_the_zero_census() -> None:
    assert recount_census([WarningRaised(code="X", message="m")]) == ZERO_CENSUS
    assert ZERO_CENSUS == Census(allowed=0, denied=0, replaced=0, abstained=0, by_seam={}, by_decider={})


def test_counts_by_kind_seam_and_decider_with_sorted_keys() -> None:
    census = recount_census(DECISIONS)
    assert (census.allowed, census.denied, census.replaced, census.abstained) == (1, 2, 1, 1)
    assert list(census.by_seam.items()) == [("control_request", 2), ("hook", 1), ("none", 1), ("owned_tool", 1)]
    assert list(census.by_decider.items()) == [("adapter", 1), ("deadline", 1), ("embedder", 1), ("frame", 1), ("observe", 1)]
    assert count_decision(ZERO_CENSUS, DECISIONS[0]).by_seam == {"hook": 1}


def test_a_reader_takes_session_endeds_census_else_recounts() -> None:
    ended = read_event(SPEC_SESSION_ENDED).unwrap().payload
    assert stream_census([*DECISIONS, ended]) == ended.census
    assert stream_census(DECISIONS) == recount_census(DECISIONS)


def test_a_reader_counts_a_bypass_written_after_session_ended() -> None:
    """The deny that shows a bypass came after the terminal record: ``session.ended.census`` was written
    without it, and a reader's census counts the later ``DECISION_BYPASSED``."""
    ended = read_event(SPEC_SESSION_ENDED).unwrap().payload
    assert isinstance(ended, SessionEnded)
    bypass = WarningRaised(code="DECISION_BYPASSED", message="metaharness denied call c1, yet ...")
    assert stream_census([*DECISIONS, ended, bypass]).bypassed == 1
    earlier = msgspec.structs.replace(ended, census=msgspec.structs.replace(ended.census, bypassed=1))
    assert stream_census([bypass, earlier]).bypassed == 1
    assert stream_census([bypass, earlier, bypass]).bypassed == 2
    assert stream_census([*DECISIONS, bypass]).bypassed == 1
    assert stream_census([*DECISIONS, ended, WarningRaised(code="X", message="m")]) == ended.census
