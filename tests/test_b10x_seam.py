"""The b10x seam over hand-written records (docs/adapters/b10x.md#reading-the-record, #caller-seam): mapping, holding,
attempts, the caller seam."""

from __future__ import annotations

import msgspec
import pytest
from helpers.frames import frame_skeleton

from metaharness.pure.b10x.replay import replay_b10x, replay_settings
from metaharness.pure.b10x.seam import (
    AnswerLine,
    abandon_pending,
    answer_line,
    cost_total,
    end_of_record,
    expire,
    open_seam,
    read_line,
    take_command,
    unverified_tier,
    wind_up,
)
from metaharness.pure.commands import ToolDecide, read_command, unreadable_command
from metaharness.pure.decisions import Arm
from metaharness.pure.events import Abstain, Allow, Deny, EventValue, Replace, UnknownProcess, encode_event, read_event
from metaharness.pure.frames import seal_frame

SPEC_FRAME = frame_skeleton("development/default", "implement", "implement", 3, prior=[{"text": "the specification is approved", "source": "docs/specs/one.md"}], obligations=[{"text": "the suite is red before the implementation", "asked_by": "workflows/development/default.yaml"}], next=[{"id": "verify"}], handoff={"handoff": "artifact", "name": "the implementation", "kind": "change"}, operations=[{"op": "search"}, {"op": "file.read"}, {"op": "file.edit"}, {"op": "dir.list"}, {"op": "file.write"}], subjects=[
        {"subject": "file:src/**", "operations": [{"op": "file.read"}, {"op": "file.edit"}, {"op": "file.write"}, {"op": "dir.list"}, {"op": "search"}]},
        {"subject": "file:**", "operations": [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]},
    ], entities=None)

STARTED = (
    b'{"kind":"started","model":"b10x-emulated","workspace":"/scratch/run/work","published_tools":["file_read","dir_list",'
    b'"search","find","file_write","file_edit"],"operations":["file.read","dir.list","search","find","file.write",'
    b'"file.edit"],"withheld":[{"tool":"run","reason":"no program was allowed; pass --allow-program"}],"skills":[],'
    b'"agents":[],"profiles":[],"context":[],"toolchains":[],"mcp":[],"credential_source":"none"}'
)
FLAT_WRITE = [
    STARTED,
    b'{"kind":"turn-started","turn":1}',
    b'{"kind":"tool-arguments-delta","call_id":"call_b10x_001","delta":"{}"}',
    b'{"kind":"usage","model":"b10x-emulated","input_tokens":42,"output_tokens":8,"cached_input_tokens":7}',
    b'{"kind":"tool-requested","call_id":"call_b10x_001","name":"file_write","arguments":{"path":"note.md","text":"written by the harness\\n"},"operation":"file.write","subjects":["file:note.md"]}',
    b'{"kind":"approval-required","call_id":"call_b10x_001","name":"file_write"}',
    b'{"kind":"approval-resolved","call_id":"call_b10x_001","approved":false}',
    b'{"kind":"tool-completed","call_id":"call_b10x_001","failed":true}',
    b'{"kind":"turn-started","turn":2}',
    b'{"kind":"text-delta","text":"that is what "}',
    b'{"kind":"text-delta","text":"the tool said"}',
    b'{"kind":"usage","model":"b10x-emulated","input_tokens":42,"output_tokens":4,"cached_input_tokens":7}',
    b'{"kind":"finished","stop":{"kind":"completed"},"turns":2}',
]


def stream_events(stream: bytes) -> list[dict]:
    return [msgspec.json.decode(line) for line in stream.splitlines()]


def events(*effects: object) -> list[dict]:
    """The event values among ``effects``, each as the object its line encodes."""
    return [msgspec.json.decode(encode_event(1, "r", e.payload, e.at)) for e in effects if isinstance(e, EventValue)]


def frame():
    return seal_frame(SPEC_FRAME).unwrap()


def test_spec_example_frame_denies_write_by_subject_rule() -> None:
    """docs/events.md#example-stream: the write falls under file:** which does not admit file.write."""
    settings = replay_settings(run="b10x-48213", decisions="frame", frame=frame(), transcript_path="/scratch/run/loop.jsonl")
    outcome = replay_b10x(settings, b"\n".join(FLAT_WRITE) + b"\n")
    got = stream_events(outcome.stream)
    assert [e["event"] for e in got] == [
        "session.started", "warning", "turn.started", "usage", "tool.requested", "tool.decided", "tool.result",
        "turn.started", "text", "text", "usage", "session.ended", "stream.closed",
    ]
    assert got[1]["message"] == (
        "the caller seam cannot decide file_read, dir_list, search, find: the loop runs them unasked below its approval ceiling"
    )
    assert got[2]["frame_digest"] == "63f68041c6a314486df8b0c581938af9a7ea3625e883a0fddafd308f2662c19d"
    assert got[4]["seam"] == "control_request" and got[4]["decision_required"] is False
    assert got[5]["decision"] == {
        "decision": "deny",
        "reason": "file:note.md falls under the subject rule file:**, which does not admit file.write; a refusal is the answer, not an obstacle",
    }
    assert got[11]["census"] == {"allowed": 0, "denied": 1, "replaced": 0, "abstained": 0, "by_seam": {"control_request": 1}, "by_decider": {"frame": 1}}
    assert got[11]["final_answer"] == {"text": "that is what the tool said", "turn_id": None}
    assert outcome.answers == (
        b'{"call_id":"call_b10x_001","decision":"deny","reason":"file:note.md falls under the subject rule file:**, '
        b'which does not admit file.write; a refusal is the answer, not an obstacle"}\n'
    )
    assert outcome.reason == "completed"
    for line in outcome.stream.splitlines():
        assert read_event(line).unwrap()


def test_observe_records_and_decides_nothing() -> None:
    outcome = replay_b10x(replay_settings(transcript_path="r"), b"\n".join(FLAT_WRITE))
    got = stream_events(outcome.stream)
    assert not [e for e in got if e["event"] == "tool.decided"]
    requested = next(e for e in got if e["event"] == "tool.requested")
    assert (requested["seam"], requested["decision_required"], requested["deadline_ms"]) == ("none", False, None)
    assert {"event": "warning", "code": "approval-denied", "message": "the approver denied call_b10x_001"}.items() <= next(
        e for e in got if e.get("code") == "approval-denied"
    ).items()
    assert not [e for e in got if e.get("code") == "COVERAGE_GAP"]
    assert outcome.answers == b""


def test_held_call_released_unasked_on_seam_none() -> None:
    lines = [
        b'{"kind":"tool-requested","call_id":"c1","name":"file_read","arguments":{"path":"README.md"}}',
        b'{"kind":"tool-completed","call_id":"c1","failed":false}',
        b'{"kind":"tool-requested","call_id":"c2","name":"dir_list","arguments":{}}',
    ]
    got = stream_events(replay_b10x(replay_settings(decisions="frame", frame=frame(), transcript_path="r"), b"\n".join(lines)).stream)
    assert [e["event"] for e in got] == ["tool.requested", "tool.result", "tool.requested", "warning", "warning",
                                         "stream.closed"]  # fmt: skip
    assert got[0]["seam"] == "none" and got[2]["subjects"] == ["file:."]
    assert got[3]["code"] == "RESULT_UNOBSERVED" and "c2" in got[3]["message"] and "c1" not in got[3]["message"]
    assert got[4]["code"] == "NO_TERMINAL_RECORD"


def test_turn_retried_discards_the_interrupted_attempts_deltas() -> None:
    lines = [
        b'{"kind":"turn-started","turn":1}',
        b'{"kind":"text-delta","text":"lost"}',
        b'{"kind":"reasoning-delta","text":"lost too"}',
        b'{"kind":"warning","code":"turn-retried","message":"attempt 1 of 4 failed"}',
        b'{"kind":"turn-retried","turn":1,"attempt":1,"reason":"the stream was cut"}',
        b'{"kind":"text-delta","text":"kept"}',
        b"",
        b"not json",
        b'{"kind":"finished","stop":{"kind":"completed"},"turns":1}',
    ]
    got = stream_events(replay_b10x(replay_settings(transcript_path="r"), b"\n".join(lines)).stream)
    assert [e["event"] for e in got] == ["turn.started", "warning", "warning", "text", "opaque", "session.ended", "stream.closed"]
    assert got[1]["code"] == "turn-retried"
    assert got[2]["message"] == (
        "turn 1 was interrupted and is being retried (retry 1): the stream was cut; "
        "2 streamed delta(s) from the interrupted attempt were discarded"
    )
    assert got[4]["source_line"] == 8 and got[4]["vendor_subtype"] is None
    assert got[5]["final_answer"]["text"] == "kept"


def test_record_readings() -> None:
    lines = [
        STARTED,
        STARTED,
        b'{"kind":"rates","source":"p","as_of":"2026"}',
        b'{"kind":"cost","model":"m","micro_usd":1234}',
        b'{"kind":"cost","model":"m","micro_usd":1}',
        b'{"kind":"compacted","elided_results":2,"elided_bytes":100,"summarised_items":1,"bytes_before":900}',
        b'{"kind":"credential-renewed","source":"/t","provider":"openai","refresh_token_rotated":true,"byte_preserving":true}',
        b'{"kind":"hook-ran","point":"pre","decision":"block"}',
        b'{"kind":"hook-ran","point":"pre","decision":"failed","program":"/bin/h"}',
        b'{"kind":"hook-ran","point":"pre","decision":"proceed"}',
        b'{"kind":"delegated","x":1}',
        b'{"kind":"refused","reason":"--base-url is required"}',
        b'{"kind":"session","id":"s1","path":"/p"}',
        b'{"kind":"answered","call_id":"a","value":{"ok":true}}',
        b'{"kind":"finished","stop":{"kind":"max-cost","turns":3}}',
    ]
    got = stream_events(replay_b10x(replay_settings(transcript_path="r"), b"\n".join(lines)).stream)
    kinds = [(e["event"], e.get("code") or e.get("vendor_subtype")) for e in got]
    assert kinds == [
        ("session.started", None), ("opaque", "started"), ("warning", "compacted"), ("warning", "credential-renewed"),
        ("warning", "hook-refused"), ("warning", "hook-failed"), ("opaque", "delegated"), ("warning", "loop-refused"),
        ("warning", "session-written"), ("session.ended", None), ("stream.closed", None),
    ]
    assert got[2]["message"] == (
        "the loop compacted the conversation: 2 result(s) elided (100 bytes), 1 item(s) summarised, 900 → unknown bytes"
    )
    assert got[3]["message"] == "the loop renewed the openai credential at /t (expiry unknown; refresh token rotated: true)"
    assert got[4]["message"] == "a hook refused the call and gave no reason" and got[5]["message"] == "/bin/h"
    ended = got[9]
    assert (ended["num_turns"], ended["subtype"], ended["is_error"], ended["final_answer"]) == (3, "max-cost", True, None)
    assert ended["subagents_spawned"] is None
    assert b'"total_cost_usd":0.001235,' in replay_b10x(replay_settings(transcript_path="r"), b"\n".join(lines)).stream
    assert got[-1]["reason"] == "budget"


@pytest.mark.parametrize(("micro", "text"), [(1234, b"0.001234"), (2500000, b"2.5"), (0, b"0.0"), (1, b"0.000001")])
def test_cost_total(micro: int, text: bytes) -> None:
    assert bytes(cost_total(micro)) == text


def test_answer_lines_are_byte_exact() -> None:
    assert answer_line("call_b10x_001", Allow()) == b'{"call_id":"call_b10x_001","decision":"allow"}\n'
    assert answer_line("c", Deny(reason='say "no"\n')) == b'{"call_id":"c","decision":"deny","reason":"say \\"no\\"\\n"}\n'
    assert b"abstained on this call" in answer_line("c", Abstain())
    assert b"replaced input" in answer_line("c", Replace(input={}))


def _ask_state(**settings):
    state, _ = open_seam(replay_settings(decisions="ask", transcript_path="r", **settings))
    for number, line in enumerate(FLAT_WRITE[:6], start=1):
        state, effects = read_line(state, number, line)
    return state, effects


def test_ask_presents_then_embedder_decides() -> None:
    state, effects = _ask_state()
    requested = events(*effects)[-1]
    assert (requested["decision_required"], requested["deadline_ms"]) == (True, 25000)
    assert isinstance(effects[-1], Arm) and effects[-1].call_id == "call_b10x_001"
    _, unknown, _ = take_command(state, ToolDecide(id="u", call_id="x", decision=Allow()), None)
    assert events(unknown[0])[0]["outcome"]["refused"]["code"] == "UNKNOWN_CALL"
    state, effects, control = take_command(state, ToolDecide(id="c1", call_id="call_b10x_001", decision=Allow()), 12)
    assert control is None
    assert effects[0] == AnswerLine("call_b10x_001", b'{"call_id":"call_b10x_001","decision":"allow"}\n')
    decided, result = events(effects[1])[0], events(effects[2])[0]
    assert (decided["decided_by"], decided["latency_ms"], decided["seam"]) == ("embedder", 12, "control_request")
    assert result == {**result, "event": "command.result", "id": "c1"}
    _, late, _ = take_command(state, ToolDecide(id="c2", call_id="call_b10x_001", decision=Allow()), 1)
    assert events(late[0])[0]["outcome"]["refused"]["code"] == "TOO_LATE"
    state, effects = read_line(state, 7, FLAT_WRITE[6])
    assert events(effects[0])[0]["message"] == (
        "the loop resolved call_b10x_001 as approved=false and metaharness answered allow"
    )


def test_a_reasonless_deny_is_answered_malformed_and_the_call_stays_open() -> None:
    state, _ = _ask_state()
    line = b'{"format":"metaharness.command/1","id":"d1","command":"tool.decide","call_id":"call_b10x_001","decision":{"decision":"deny"}}'
    unreadable = unreadable_command(line, read_command(line).failure())
    assert unreadable is not None
    state, effects, _ = take_command(state, unreadable, None)
    (refused,) = events(*effects)
    assert (refused["id"], refused["outcome"]["refused"]["code"]) == ("d1", "MALFORMED")
    assert not [e for e in effects if isinstance(e, AnswerLine)] and state.desk.pending_call_ids() == ("call_b10x_001",)


def test_ask_deadline_denies() -> None:
    state, _ = _ask_state()
    state, effects = expire(state, "call_b10x_001", 25003)
    assert effects[0].line.startswith(b'{"call_id":"call_b10x_001","decision":"deny","reason":"metaharness\'s own 25000ms')
    decided = events(effects[1])[0]
    assert (decided["decided_by"], decided["latency_ms"]) == ("deadline", 25003)


def test_shorter_vendor_budget_through_the_library() -> None:
    """A seam may declare a shorter budget: the deadline is half of one of 5000 ms or less
    (docs/decisions.md#deadlines)."""
    from metaharness.pure.b10x.seam import SeamSettings

    settings = msgspec.structs.replace(replay_settings(decisions="ask", transcript_path="r"), vendor_budget_ms=400)
    assert settings.deadline_ms == 200
    state, _ = open_seam(settings)
    for number, line in enumerate(FLAT_WRITE[:6], start=1):
        state, effects = read_line(state, number, line)
    assert events(effects[-2])[0]["deadline_ms"] == 200
    _, effects = expire(state, "call_b10x_001", 201)
    assert b"own 200ms decision deadline" in effects[0].line and b"vendor's 400ms timeout" in effects[0].line
    assert isinstance(settings, SeamSettings)


def test_stream_end_abandons_a_pending_call() -> None:
    state, _ = _ask_state()
    state, effects = wind_up(state, process=UnknownProcess())
    assert effects[0] == AnswerLine(
        "call_b10x_001",
        b'{"call_id":"call_b10x_001","decision":"deny","reason":"the stream ended before this call was decided, so nothing ran"}\n',
    )
    got = events(*effects)
    assert [e["event"] for e in got] == ["tool.decided", "warning", "warning", "warning", "stream.closed"]
    assert got[1]["message"] == "call_b10x_001 was never decided by the embedder"
    assert got[2]["code"] == "RESULT_UNOBSERVED" and "call_b10x_001" in got[2]["message"]
    assert got[3]["code"] == "NO_TERMINAL_RECORD" and got[4]["reason"] == "error"


def test_interrupt_abandons_with_its_reason() -> None:
    state, _ = _ask_state()
    _, effects = abandon_pending(state, "the run was interrupted")
    assert b"the run was interrupted before this call was decided" in effects[0].line


def test_unexpected_question_is_denied_and_warned() -> None:
    state, _ = open_seam(replay_settings(decisions="frame", frame=frame(), transcript_path="r"))
    state, effects = read_line(state, 1, b'{"kind":"approval-required","call_id":"zz","name":"file_write"}')
    assert effects[0] == AnswerLine(
        "zz", b'{"call_id":"zz","decision":"deny","reason":"metaharness held no announcement of this call, so it cannot decide it; nothing ran"}\n'
    )
    got = events(*effects[1:])
    assert got[0]["decided_by"] == "adapter"
    assert got[1] == {**got[1], "code": "approval-unexpected", "message": "the loop asked about zz, which metaharness was not holding as a question"}
    state, effects = read_line(state, 2, b'{"kind":"approval-resolved","call_id":"zz","approved":false}')
    assert effects == ()


def test_resolution_without_an_answer_disagrees() -> None:
    state, _ = open_seam(replay_settings(decisions="frame", frame=frame(), transcript_path="r"))
    _, effects = read_line(state, 1, b'{"kind":"approval-resolved","call_id":"q","approved":true}')
    assert events(effects[0])[0]["message"] == "the loop resolved q as approved=true and metaharness wrote no answer for it"


def test_mutated_request_is_denied_by_adapter() -> None:
    state, _ = open_seam(replay_settings(decisions="frame", frame=frame(), transcript_path="r"))
    lines = [
        b'{"kind":"tool-requested","call_id":"c","name":"file_write","arguments":{"path":"src/a"}}',
        b'{"kind":"approval-required","call_id":"c","name":"file_write"}',
        b'{"kind":"tool-requested","call_id":"c","name":"file_write","arguments":{"path":"src/b"}}',
        b'{"kind":"approval-required","call_id":"c","name":"file_write"}',
    ]
    collected = []
    for number, line in enumerate(lines, start=1):
        state, effects = read_line(state, number, line)
        collected.extend(effects)
    answers = [e.line for e in collected if isinstance(e, AnswerLine)]
    assert answers[0] == b'{"call_id":"c","decision":"allow"}\n'
    assert answers[1] == b'{"call_id":"c","decision":"deny","reason":"this call id was already presented with a different input"}\n'
    got = events(*collected)
    assert [e.get("code") for e in got if e["event"] == "warning"] == ["REQUEST_MUTATED"]
    assert state.desk.census.allowed == 1 and state.desk.census.denied == 1


def test_unverified_tier_message() -> None:
    assert unverified_tier().message.startswith("this run's decisions travel on the b10x caller seam")


def test_end_of_record_flushes_open_attempt() -> None:
    state, _ = open_seam(replay_settings(transcript_path="r"))
    state, _ = read_line(state, 1, b'{"kind":"turn-started","turn":1}')
    state, effects = read_line(state, 2, b'{"kind":"text-delta","text":"x"}')
    assert effects == ()
    _, effects = end_of_record(state)
    assert events(effects[0])[0]["text"] == "x"
