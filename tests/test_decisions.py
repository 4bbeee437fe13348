"""The decision desk: modes, correlation, repeats, deadlines and abandonment (docs/decisions.md#modes, #admission,
#correlation-and-abandonment, #deadlines)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from metaharness.pure.commands import ToolDecide
from metaharness.pure.decisions import (
    Answer,
    Arm,
    Desk,
    Disarm,
    Effect,
    Emit,
    PresentedCall,
    abandon,
    begin_turn,
    decide,
    expire,
    open_desk,
    present,
    request_digest,
    set_frame,
)
from metaharness.pure.events import Abstain, Allow, Deny, EventValue, Replace, Stream, ToolDecided
from metaharness.pure.frames import Frame, Operation, seal_frame
from metaharness.pure.run_stages import decision_deadline
from metaharness.pure.stream_writer import write_line

READS = [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]
WRITES = [{"op": "file.edit"}, {"op": "file.write"}]


def frame(operations: list[dict[str, Any]], subjects: list[dict[str, Any]] | None = None) -> Frame:
    document: dict[str, Any] = {
        "workflow": {"id": "development/default", "version": "1"},
        "node": {"id": "implement"},
        "step": {"workflow": "development/default", "state": "implement", "index": 3, "attempt": 1},
        "prior": [{"text": "the specification is approved", "source": "docs/specs/one.md"}],
        "obligations": [{"text": "the suite is red before the implementation", "asked_by": "workflows/development/default.yaml"}],
        "reaching": [],
        "next": [{"id": "verify"}],
        "handoff": {"handoff": "artifact", "name": "the implementation", "kind": "change"},
        "operations": operations,
        "entities": None,
    }
    if subjects is not None:
        document["subjects"] = subjects
    return seal_frame(document).unwrap()


SPEC_FRAME = frame(
    [{"op": "search"}, {"op": "file.read"}, {"op": "file.edit"}, {"op": "dir.list"}, {"op": "file.write"}],
    [{"subject": "file:src/**", "operations": READS + WRITES}, {"subject": "file:**", "operations": READS}],
)
REASON_25000 = (
    "metaharness's own 25000ms decision deadline expired before an answer arrived; it is strictly less than the "
    "vendor's 30000ms timeout so the refusal is metaharness's and not an ambiguity"
)


def write_call(call_id: str = "call_b10x_001", path: str = "note.md", seam: str = "control_request") -> PresentedCall:
    return PresentedCall(
        call_id=call_id,
        name="file_write",
        input={"path": path, "text": "written by the harness\n"},
        seam=seam,
        operations=(Operation("file.write"),),
        subjects=(f"file:{path}",),
    )


def events(effects: tuple[Effect, ...]) -> list[Any]:
    return [effect.event for effect in effects if isinstance(effect, Emit)]


def decided(effects: tuple[Effect, ...]) -> list[ToolDecided]:
    return [event for event in events(effects) if isinstance(event, ToolDecided)]


def kinds(effects: tuple[Effect, ...]) -> list[str]:
    return [
        type(effect.event).__struct_config__.tag if isinstance(effect, Emit) else type(effect).__name__
        for effect in effects
    ]


def test_frame_mode_reproduces_the_spec_stream_lines() -> None:
    desk, effects = present(open_desk("frame", SPEC_FRAME), write_call())
    assert kinds(effects) == ["tool.requested", "Answer", "tool.decided"]
    stream = Stream("b10x-48213", written=6)
    stream, requested = write_line(stream, EventValue(events(effects)[0]))
    _, decision = write_line(stream, EventValue(events(effects)[1]))
    assert requested == (
        b'{"format":"metaharness.event/1","seq":7,"run":"b10x-48213","event":"tool.requested","call_id":"call_b10x_001",'
        b'"name":"file_write","input":{"path":"note.md","text":"written by the harness\\n"},"operations":["file.write"],'
        b'"subjects":["file:note.md"],"decision_required":false,"deadline_ms":null,"seam":"control_request"}\n'
    )
    assert decision == (
        b'{"format":"metaharness.event/1","seq":8,"run":"b10x-48213","event":"tool.decided","call_id":"call_b10x_001",'
        b'"decision":{"decision":"deny","reason":"file:note.md falls under the subject rule file:**, which does not admit '
        b'file.write; a refusal is the answer, not an obstacle"},"decided_by":"frame","seam":"control_request","latency_ms":null}\n'
    )
    assert effects[1] == Answer("call_b10x_001", decided(effects)[0].decision, "control_request")
    assert json.loads(json.dumps(desk.census.by_decider)) == {"frame": 1}
    assert desk.census.denied == 1 and desk.census.by_seam == {"control_request": 1}


def test_frame_mode_allows_what_the_frame_admits() -> None:
    desk, effects = present(open_desk("frame", SPEC_FRAME), write_call(path="src/a.py"))
    assert decided(effects)[0].decision == Allow() and decided(effects)[0].decided_by == "frame"
    assert desk.pending_call_ids() == ()


def test_frame_mode_uncovered_tool_warns_and_omits_operations() -> None:
    call = PresentedCall(call_id="c", name="find", input={}, seam="control_request", subjects=("file:.",))
    _, effects = present(open_desk("frame", SPEC_FRAME), call)
    assert kinds(effects) == ["tool.requested", "warning", "Answer", "tool.decided"]
    requested = write_line(Stream("r"), EventValue(events(effects)[0]))[1]
    assert b'"operations"' not in requested and b'"subjects":["file:."]' in requested
    assert events(effects)[1].code == "UNCOVERED_TOOL"


def test_frame_mode_without_a_frame_abstains_on_seam_none_and_warns_once() -> None:
    desk = open_desk("frame")
    desk, first = present(desk, write_call("a"))
    desk, second = present(desk, write_call("b"))
    assert kinds(first) == ["tool.requested", "warning", "Answer", "tool.decided"]
    assert kinds(second) == ["tool.requested", "Answer", "tool.decided"]
    assert events(first)[0].seam == "control_request"
    assert events(first)[1].code == "NO_FRAME_IN_FORCE"
    assert events(first)[1].message == (
        "this run is in frame mode and no frame is in force, so nothing narrowed this call; "
        "the record says so rather than claiming a frame decided it"
    )
    assert decided(second) == [
        ToolDecided(call_id="b", decision=Abstain(), decided_by="adapter", seam="none", latency_ms=None)
    ]
    assert second[1] == Answer("b", Abstain(), "control_request")
    assert desk.census.abstained == 2 and desk.census.by_seam == {"none": 2}


def test_ask_mode_presents_arms_and_takes_the_embedders_decision() -> None:
    desk, effects = present(open_desk("ask"), write_call())
    requested = events(effects)[0]
    assert (requested.decision_required, requested.deadline_ms) == (True, 25000)
    assert effects[-1] == Arm("call_b10x_001", 25000)
    assert desk.pending_call_ids() == ("call_b10x_001",)
    desk, effects = decide(desk, ToolDecide(id="c1", call_id="call_b10x_001", decision=Replace({"path": "b"})), 1234)
    assert kinds(effects) == ["Disarm", "Answer", "tool.decided", "command.result"]
    assert decided(effects) == [
        ToolDecided(call_id="call_b10x_001", decision=Replace({"path": "b"}), decided_by="embedder", seam="control_request", latency_ms=1234)
    ]
    assert events(effects)[1].id == "c1" and events(effects)[1].outcome.applies_at is None
    assert desk.census.replaced == 1 and desk.census.by_decider == {"embedder": 1}


def test_a_second_decision_is_too_late_and_an_unseen_call_is_unknown() -> None:
    desk, _ = present(open_desk("ask"), write_call())
    desk, _ = decide(desk, ToolDecide(id="c1", call_id="call_b10x_001", decision=Allow()), 10)
    same, effects = decide(desk, ToolDecide(id="c2", call_id="call_b10x_001", decision=Allow()), 20)
    assert same == desk
    assert events(effects)[0].outcome.refused.code == "TOO_LATE"
    assert events(effects)[0].outcome.refused.reason == (
        "call_b10x_001 was decided or its window closed; a decision cannot be replayed"
    )
    _, effects = decide(desk, ToolDecide(id="c3", call_id="call_nobody", decision=Allow()), None)
    assert events(effects)[0].outcome.refused.code == "UNKNOWN_CALL"
    assert events(effects)[0].outcome.refused.reason == "call_nobody does not correlate to an open request"


def test_ask_mode_with_a_frame_denies_what_the_frame_refuses_at_once() -> None:
    desk, effects = present(open_desk("ask", SPEC_FRAME), write_call())
    assert kinds(effects) == ["tool.requested", "Answer", "tool.decided"]
    assert events(effects)[0].decision_required is False and events(effects)[0].deadline_ms is None
    assert decided(effects)[0].decided_by == "frame"
    desk, effects = present(desk, write_call("call_2", path="src/x"))
    assert effects[-1] == Arm("call_2", 25000) and events(effects)[0].decision_required is True


def test_the_deadline_denies_with_the_spec_reason() -> None:
    desk, _ = present(open_desk("ask"), write_call())
    desk, effects = expire(desk, "call_b10x_001", 25003)
    assert decided(effects) == [
        ToolDecided(call_id="call_b10x_001", decision=Deny(REASON_25000), decided_by="deadline", seam="control_request", latency_ms=25003)
    ]
    assert effects[0] == Answer("call_b10x_001", Deny(REASON_25000), "control_request")
    assert expire(desk, "call_b10x_001", 25010) == (desk, ())
    _, late = decide(desk, ToolDecide(id="c", call_id="call_b10x_001", decision=Allow()), 26000)
    assert events(late)[0].outcome.refused.code == "TOO_LATE"


def test_the_deadline_follows_the_vendor_budget() -> None:
    assert decision_deadline(30000) == 25000
    assert decision_deadline(60000) == 55000
    assert decision_deadline(5000) == 2500
    desk, effects = present(open_desk("ask", vendor_budget_ms=60000), write_call())
    assert effects[-1] == Arm("call_b10x_001", 55000)
    _, effects = expire(desk, "call_b10x_001", 55000)
    assert decided(effects)[0].decision.reason == (
        "metaharness's own 55000ms decision deadline expired before an answer arrived; it is strictly less than the "
        "vendor's 60000ms timeout so the refusal is metaharness's and not an ambiguity"
    )


def test_abandonment_answers_first_then_records_and_warns() -> None:
    desk, _ = present(open_desk("ask"), write_call("a"))
    desk, _ = present(desk, write_call("b", path="other.md"))
    desk, effects = abandon(desk, "the turn ended")
    assert kinds(effects) == ["Disarm", "Answer", "tool.decided", "warning"] * 2
    reason = "the turn ended before this call was decided, so nothing ran"
    assert [d.call_id for d in decided(effects)] == ["a", "b"]
    assert all(d.decision == Deny(reason) and d.decided_by == "adapter" for d in decided(effects))
    assert events(effects)[1].code == "PENDING_CALL_ABANDONED"
    assert events(effects)[1].message == "a was never decided by the embedder"
    assert desk.pending_call_ids() == ()
    _, late = decide(desk, ToolDecide(id="c", call_id="a", decision=Allow()), 1)
    assert events(late)[0].outcome.refused.code == "TOO_LATE"
    assert abandon(desk, "the stream ended") == (desk, ())


def test_a_repeat_is_never_decided_twice_but_is_answered_again() -> None:
    desk, _ = present(open_desk("frame", SPEC_FRAME), write_call())
    again, effects = present(desk, write_call())
    assert again == desk
    assert kinds(effects) == ["tool.requested", "Answer"]
    assert effects[1] == Answer("call_b10x_001", Deny(decided_by_frame_reason()), "control_request")
    assert again.census.denied == 1


def decided_by_frame_reason() -> str:
    return "file:note.md falls under the subject rule file:**, which does not admit file.write; a refusal is the answer, not an obstacle"


def test_a_repeat_while_pending_is_re_emitted_and_not_re_armed() -> None:
    desk, _ = present(open_desk("ask"), write_call())
    again, effects = present(desk, write_call())
    assert again == desk and kinds(effects) == ["tool.requested"]
    assert events(effects)[0].decision_required is True


def test_a_mutated_request_is_denied_by_the_adapter_and_the_original_stays_pending() -> None:
    desk, _ = present(open_desk("ask"), write_call())
    mutated = write_call()
    mutated = PresentedCall(**{**{f: getattr(mutated, f) for f in mutated.__struct_fields__}, "input": {"path": "x"}})
    desk, effects = present(desk, mutated)
    assert kinds(effects) == ["tool.requested", "warning", "Answer", "tool.decided"]
    assert events(effects)[0].decision_required is False
    assert events(effects)[1].code == "REQUEST_MUTATED"
    assert events(effects)[1].message == (
        "call call_b10x_001 was presented again with a different input; the correlation key is the call id plus "
        "the digest of the request as presented, so the earlier decision does not carry over"
    )
    assert decided(effects)[0].decision == Deny("this call id was already presented with a different input")
    assert decided(effects)[0].decided_by == "adapter"
    assert desk.pending_call_ids() == ("call_b10x_001",)
    _, effects = decide(desk, ToolDecide(id="c", call_id="call_b10x_001", decision=Allow()), 5)
    assert decided(effects)[0].decided_by == "embedder"


def test_a_mutated_record_on_seam_none_is_warned_but_not_decided() -> None:
    desk, _ = present(open_desk("observe"), write_call(seam="none"))
    changed = PresentedCall(call_id="call_b10x_001", name="file_write", input={}, seam="none")
    desk, effects = present(desk, changed)
    assert kinds(effects) == ["tool.requested", "warning"]
    assert desk.census.allowed + desk.census.denied == 0


def test_observe_allows_on_a_deciding_seam() -> None:
    desk, effects = present(open_desk("observe"), write_call(seam="hook"))
    assert kinds(effects) == ["tool.requested", "Answer", "tool.decided"]
    assert decided(effects) == [ToolDecided(call_id="call_b10x_001", decision=Allow(), decided_by="observe", seam="hook", latency_ms=None)]
    assert events(effects)[0].decision_required is False
    assert desk.census.by_decider == {"observe": 1} and desk.census.by_seam == {"hook": 1}


def test_seam_none_only_records() -> None:
    desk, effects = present(open_desk("ask"), write_call(seam="none"))
    assert kinds(effects) == ["tool.requested"]
    assert events(effects)[0].seam == "none" and events(effects)[0].deadline_ms is None
    _, effects = decide(desk, ToolDecide(id="c", call_id="call_b10x_001", decision=Allow()), 1)
    assert events(effects)[0].outcome.refused.code == "UNKNOWN_CALL"


def test_a_recorded_call_later_asked_on_a_deciding_seam_is_decided() -> None:
    desk, _ = present(open_desk("frame", SPEC_FRAME), write_call(seam="none"))
    _, effects = present(desk, write_call())
    assert kinds(effects) == ["tool.requested", "Answer", "tool.decided"]


def test_frame_set_applies_at_the_next_turn() -> None:
    desk = open_desk("frame")
    desk, effects = set_frame(desk, "f1", SPEC_FRAME)
    assert events(effects)[0].outcome.applies_at == "the next turn or step boundary"
    assert desk.frame is None and desk.frame_digest is None
    _, effects = present(desk, write_call())
    assert decided(effects)[0].decision == Abstain()
    desk = begin_turn(desk)
    assert desk.frame_digest == SPEC_FRAME.digest and desk.staged_frame is None
    assert begin_turn(desk) == desk
    _, effects = present(desk, write_call("n"))
    assert decided(effects)[0].decided_by == "frame"


def test_request_digest_is_sha256_of_sorted_canonical_json() -> None:
    expected = hashlib.sha256(b'{"call_id":"c1","input":{"a":1,"b":[{"y":2,"z":1}]},"name":"Write"}').hexdigest()
    assert request_digest("c1", "Write", {"b": [{"z": 1, "y": 2}], "a": 1}) == expected


def test_the_desk_is_frozen() -> None:
    desk: Desk = open_desk("ask")
    with pytest.raises(AttributeError):
        desk.mode = "frame"  # type: ignore[misc]


def test_disarm_is_emitted_only_for_armed_calls() -> None:
    _, effects = present(open_desk("frame", SPEC_FRAME), write_call())
    assert not any(isinstance(effect, (Arm, Disarm)) for effect in effects)


@pytest.mark.parametrize(
    "path", ["/proc/4242/fd/0", "/proc/self/fd/1", "/dev/fd/0", "/dev/stdin", "/dev/stderr", "/proc", "/dev/fd/../fd/3"]
)
def test_a_file_tool_aimed_at_the_runs_pipes_is_denied_under_every_frame_and_before_ask(path: str) -> None:
    admitting = frame([{"op": "file.write"}])
    for mode, in_force in (("frame", admitting), ("frame", None), ("ask", admitting), ("ask", None)):
        _, effects = present(open_desk(mode, in_force), write_call(path=path))  # type: ignore[arg-type]
        (verdict,) = decided(effects)
        assert verdict.decided_by == "adapter" and isinstance(verdict.decision, Deny), (mode, in_force)
        assert verdict.decision.reason.startswith(f"file:{path} reaches the run's own processes and pipes")
        assert "Arm" not in kinds(effects) and events(effects)[0].decision_required is False


def test_observe_lets_a_file_tool_at_a_pipe_through_with_a_warning() -> None:
    _, effects = present(open_desk("observe"), write_call(path="/proc/self/fd/0"))
    assert kinds(effects) == ["tool.requested", "warning", "Answer", "tool.decided"]
    warning = events(effects)[1]
    assert warning.code == "HARNESS_PIPE" and "/proc/self/fd/0" in warning.message


@pytest.mark.parametrize("path", ["/procfs/x", "/dev/null", "proc/self/fd/0", "/devices/fd"])
def test_paths_beside_the_pipes_are_admitted_as_usual(path: str) -> None:
    _, effects = present(open_desk("frame", frame([{"op": "file.write"}])), write_call(path=path))
    assert decided(effects)[0].decided_by == "frame" and isinstance(decided(effects)[0].decision, Allow)
