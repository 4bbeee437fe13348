"""The codex rollout mapping and the one-``tool.requested``-per-call correlator
(docs/adapters/common.md#vendor-decisions; docs/adapters/codex.md)."""

from __future__ import annotations

import json

import msgspec
from helpers.frames import frame_skeleton

from metaharness.pure.census import ZERO_CENSUS
from metaharness.pure.codex.rendering import resolve_call, shell_subjects
from metaharness.pure.codex.replay import replay_rollout
from metaharness.pure.codex.rollout import (
    RolloutLaunch,
    RolloutReader,
    read_rollout_line,
    read_sub_agent_line,
    session_ended,
)
from metaharness.pure.codex.seam import answer_body, check_replacement, denied_result, presented_call
from metaharness.pure.correlation import Correlator, Present, on_hook_call, on_readings, on_stream_end
from metaharness.pure.decisions import PresentedCall, open_desk, present
from metaharness.pure.events import (
    Abstain,
    Allow,
    Deny,
    Hermetic,
    Replace,
    ToolRequested,
    ToolResult,
    Transcript,
    read_event,
)
from metaharness.pure.frames import Operation, seal_frame
from metaharness.pure.hook_channel import HookCall
from metaharness.pure.readings import Emitted
from metaharness.pure.subjects import TreeFacts

HERMETIC = Hermetic(
    mode="off", decisions="observe", imposed=(), declared=(), unavailable=(), ambient_inputs=(), installed_plugins=()
)
LAUNCH = RolloutLaunch(
    program="codex",
    pins=("0.171.0",),
    transcript=Transcript(path="rollout.jsonl", digest=None, bytes=None),
    hermetic=HERMETIC,
)
TURN = "turn-1"


def line(kind: str, payload: dict, stamp: str = "2026-11-30T01:00:00.000Z") -> bytes:
    return json.dumps({"timestamp": stamp, "ordinal": 0, "type": kind, "payload": payload}).encode()


META = line("session_meta", {"session_id": "s-1", "id": "s-1", "cwd": "/scratch/run/work", "cli_version": "0.171.0"})
STARTED = line("event_msg", {"type": "task_started", "turn_id": TURN})
SHELL_CALL = line(
    "response_item",
    {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "echo hi"}', "call_id": "call_1"},
)
SHELL_DONE = line(
    "event_msg",
    {
        "type": "item_completed",
        "turn_id": TURN,
        "item": {
            "type": "CommandExecution",
            "id": "call_1",
            "status": "completed",
            "aggregated_output": "hi\n",
            "exit_code": 0,
        },
    },
)
SHELL_OUTPUT = line("response_item", {"type": "function_call_output", "call_id": "call_1", "output": "Output:\nhi\n"})
ANSWER = line(
    "response_item",
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
)
COUNT = line(
    "event_msg",
    {
        "type": "token_count",
        "info": {
            "total_token_usage": {
                "input_tokens": 30,
                "cached_input_tokens": 2,
                "output_tokens": 9,
                "reasoning_output_tokens": 1,
            }
        },
        "rate_limits": None,
    },
)
COMPLETE = line(
    "event_msg",
    {
        "type": "task_complete",
        "turn_id": TURN,
        "last_agent_message": "done",
        "duration_ms": 361,
        "time_to_first_token_ms": 95,
    },
)
RECORD = b"\n".join((META, STARTED, SHELL_CALL, SHELL_DONE, SHELL_OUTPUT, ANSWER, COUNT, COMPLETE)) + b"\n"


def events(stream: bytes) -> list[dict]:
    lines = stream.decode().splitlines()
    for text in lines:
        assert read_event(text.encode()).unwrap()
    return [json.loads(text) for text in lines]


def test_replay_maps_the_record_and_closes_completed():
    stream, reason = replay_rollout(RECORD, LAUNCH, "replay")
    got = events(stream)
    assert [e["event"] for e in got] == [
        "session.started",
        "turn.started",
        "tool.requested",
        "opaque",
        "tool.result",
        "text",
        "usage",
        "turn.ended",
        "session.ended",
        "stream.closed",
    ]
    assert reason == "completed"
    requested = got[2]
    assert requested["seam"] == "none" and requested["input"] == {"cmd": "echo hi"}
    assert "operations" not in requested  # exec_command renders from no operation
    result = got[4]
    assert result["outcome_source"] == "retained_tool_completion"
    assert (result["is_error"], result["exit_code"], result["content"], result["bytes"]) == (False, 0, "hi\n", 3)
    ended = got[8]
    assert ended["final_answer"] == {"text": "done", "turn_id": TURN}
    assert ended["num_turns"] == 1 and ended["duration_ms"] == 361 and ended["ttft_ms"] == 95
    assert ended["usage"]["cache_read_input_tokens"] == 2 and ended["usage"]["thinking_tokens"] == 1
    assert ended["census"] == {
        "allowed": 0,
        "denied": 0,
        "replaced": 0,
        "abstained": 0,
        "by_seam": {},
        "by_decider": {},
    }
    assert got[-1] == {
        "format": "metaharness.event/1",
        "seq": 10,
        "run": "replay",
        "event": "stream.closed",
        "events": 9,
        "reason": "completed",
        "run_id": "replay",
        "process": {"kind": "unknown"},
    }
    assert got[0]["at"] == "2026-11-30T01:00:00.000Z" and got[8]["at"] == got[7]["at"]


def test_no_task_complete_means_no_session_ended_and_reason_error():
    stream, reason = replay_rollout(b"\n".join((META, STARTED, SHELL_CALL)) + b"\n", LAUNCH, "r")
    assert reason == "error"
    assert "session.ended" not in [e["event"] for e in events(stream)]


def test_off_pin_version_warns_directly_before_session_started():
    meta = line("session_meta", {"session_id": "s", "cwd": "/w", "cli_version": "0.160.0"})
    got = events(replay_rollout(meta + b"\n", LAUNCH, "r")[0])
    assert got[0]["event"] == "warning" and got[0]["code"] == "VERSION_OFF_PIN"
    assert got[0]["message"] == (
        "codex reports 0.160.0; the adapter is pinned to 0.171.0, so this run is unverified rather than refused"
    )
    assert got[1]["event"] == "session.started"


def test_unreadable_lines_are_opaque_and_blank_lines_count():
    stream, _ = replay_rollout(META + b"\n\nnot json\n[1]\n", LAUNCH, "r")
    got = events(stream)
    assert [(e["event"], e.get("source_line")) for e in got[1:3]] == [("opaque", 3), ("opaque", 4)]
    assert got[1]["vendor_type"] is None


def test_an_error_after_the_turn_started_makes_the_end_an_error_without_final_answer():
    error = line("event_msg", {"type": "error", "message": "Your session has expired"})
    record = b"\n".join((META, STARTED, error, COMPLETE)) + b"\n"
    stream, reason = replay_rollout(record, LAUNCH, "r")
    got = events(stream)
    assert reason == "error"
    assert [e["event"] for e in got][2:4] == ["auth.expired", "opaque"]
    ended = next(e for e in got if e["event"] == "session.ended")
    assert ended["is_error"] is True and ended["final_answer"] is None


def test_evidence_of_the_wrong_family_is_unverified():
    patch_done = line(
        "event_msg",
        {
            "type": "item_completed",
            "turn_id": TURN,
            "item": {"type": "FileChange", "id": "call_1", "status": "completed"},
        },
    )
    record = b"\n".join((META, STARTED, SHELL_CALL, patch_done, SHELL_OUTPUT)) + b"\n"
    got = events(replay_rollout(record, LAUNCH, "r")[0])
    result = next(e for e in got if e["event"] == "tool.result")
    assert result["outcome_source"] is None and result["is_error"] is None and result["content"] == "Output:\nhi\n"
    assert got[got.index(result) + 1]["code"] == "TOOL_OUTCOME_UNVERIFIED"


def test_a_failed_command_is_an_error_with_its_exit_code():
    failed = line(
        "event_msg",
        {
            "type": "item_completed",
            "turn_id": TURN,
            "item": {
                "type": "CommandExecution",
                "id": "call_1",
                "status": "failed",
                "exit_code": 2,
                "aggregated_output": "no",
            },
        },
    )
    record = b"\n".join((META, STARTED, SHELL_CALL, failed, SHELL_OUTPUT)) + b"\n"
    result = next(e for e in events(replay_rollout(record, LAUNCH, "r")[0]) if e["event"] == "tool.result")
    assert (result["is_error"], result["exit_code"], result["content"]) == (True, 2, "no")


def readings_of(*raws: bytes):
    reader = RolloutReader(launch=LAUNCH)
    out = []
    for number, raw in enumerate(raws, start=1):
        reader, readings = read_rollout_line(reader, raw, number)
        out.append(readings)
    return reader, out


def bash_call(call_id: str = "call_1") -> HookCall:
    return HookCall("k1", call_id, "Bash", {"command": "echo hi"}, True)


def names(outputs) -> list[str]:
    return [
        "present"
        if isinstance(o, Present)
        else f"{type(o.payload).__struct_config__.tag}:{getattr(o.payload, 'seam', '')}"
        for o in outputs
    ]


def test_record_first_holds_until_the_hook_then_presents_once():
    _, per_line = readings_of(META, STARTED, SHELL_CALL, COUNT, SHELL_DONE, SHELL_OUTPUT)
    correlator = Correlator(live=True)
    correlator, out = on_readings(correlator, per_line[0] + per_line[1])
    assert names(out) == ["session.started:", "turn.started:"]
    correlator, out = on_readings(correlator, per_line[2])
    assert out == ()
    correlator, out = on_readings(correlator, per_line[3])
    assert out == ()
    correlator, out = on_hook_call(correlator, bash_call())
    assert names(out) == ["present", "usage:"]
    correlator, out = on_readings(correlator, per_line[4] + per_line[5])
    assert names(out) == ["opaque:", "tool.result:"]


def test_record_first_without_a_hook_is_a_coverage_gap_at_the_result():
    _, per_line = readings_of(META, SHELL_CALL, SHELL_OUTPUT)
    correlator, _ = on_readings(Correlator(live=True), per_line[0])
    correlator, out = on_readings(correlator, per_line[1])
    assert out == ()
    correlator, out = on_readings(correlator, per_line[2])
    assert names(out) == ["tool.requested:none", "warning:", "tool.result:"]
    assert out[1].payload.code == "COVERAGE_GAP" and "call_1" in out[1].payload.message


def test_seam_first_presents_at_once_and_the_later_announcement_emits_nothing():
    _, per_line = readings_of(SHELL_CALL)
    correlator, out = on_hook_call(Correlator(live=True), bash_call())
    assert names(out) == ["present"]
    correlator, out = on_readings(correlator, per_line[0])
    assert out == ()
    assert not correlator.held


def test_stream_end_releases_held_calls_as_gaps():
    _, per_line = readings_of(SHELL_CALL, COUNT)
    correlator, _ = on_readings(Correlator(live=True), per_line[0] + per_line[1])
    correlator, out = on_stream_end(correlator)
    assert names(out) == ["tool.requested:none", "warning:", "usage:"]


def test_replay_never_holds_and_never_warns():
    _, per_line = readings_of(SHELL_CALL, SHELL_OUTPUT)
    _correlator, out = on_readings(Correlator(live=False), per_line[0] + per_line[1])
    assert names(out) == ["tool.requested:none", "tool.result:"]


def test_answer_bodies_as_codex_accepts_them():
    assert answer_body(Allow()) == b""
    assert answer_body(Abstain()) == b""
    assert answer_body(Deny("not here")) == (
        b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
        b'"permissionDecisionReason":"not here"}}'
    )
    assert b"the embedder stated no reason" in answer_body(Deny("  "))
    assert answer_body(Replace({"command": "ls"})) == (
        b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow",'
        b'"updatedInput":{"command":"ls"}}}'
    )


def test_a_replacement_for_bash_or_apply_patch_needs_a_string_command():
    assert check_replacement("Bash", {"command": "ls"}).unwrap() == {"command": "ls"}
    assert check_replacement("Bash", {"cmd": "ls"}).failure().code == "MALFORMED"
    assert check_replacement("apply_patch", "raw").failure().code == "MALFORMED"
    assert check_replacement("mcp__s__t", {"x": 1}).unwrap() == {"x": 1}


def test_resolution_of_bash_apply_patch_and_mcp():
    assert resolve_call("Bash", {"command": "ls -la"}) == ((Operation("shell"),), ("proc:ls",))
    assert shell_subjects("ls | wc") == ("proc:sh",)
    assert shell_subjects("A=1 ls") == ("proc:sh",)
    assert shell_subjects("echo $(id)") == ("proc:sh",)
    add = "*** Begin Patch\n*** Add File: note.md\n+x\n*** End Patch\n"
    assert resolve_call("apply_patch", {"command": add}) == ((Operation("file.write"),), ("file:note.md",))
    update = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch\n"
    assert resolve_call("apply_patch", update) == ((Operation("file.edit"),), ("file:a.py",))
    moved = "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** End Patch\n"
    assert resolve_call("apply_patch", {"command": moved}) == ((Operation("file.write"),), ("file:a.py", "file:b.py"))
    assert resolve_call("mcp__docs__search", {}) == ((Operation("mcp.call", "docs", "search"),), ())
    assert resolve_call("exec_command", {"cmd": "ls"}) == ((), ())


def test_session_ended_only_after_task_complete():
    reader, _ = readings_of(META, STARTED)
    assert session_ended(reader, ZERO_CENSUS) is None
    reader, _ = readings_of(META, STARTED, COMPLETE)
    assert session_ended(reader, ZERO_CENSUS) is not None


def test_tool_requested_from_a_custom_call_keeps_the_raw_patch():
    patch = "*** Begin Patch\n*** Add File: note.md\n+x\n*** End Patch\n"
    call = line("response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": "c2"})
    _, per_line = readings_of(call)
    requested = per_line[0][0].requested
    assert isinstance(requested, ToolRequested)
    assert (
        requested.input == patch and requested.operations == ("file.write",) and requested.subjects == ("file:note.md",)
    )
    output = line("response_item", {"type": "custom_tool_call_output", "call_id": "c2", "output": {"a": 1}})
    _, per_line = readings_of(output)
    result = per_line[0][0].result
    assert isinstance(result, ToolResult) and result.bytes == len(b'{"a":1}')
    assert not isinstance(per_line[0][0], Emitted)


def test_a_hook_call_in_another_directory_keeps_it_as_workdir() -> None:
    call = HookCall("k", "c1", "Bash", {"command": "pwd"}, True, "/w/sub")
    tree = TreeFacts("/w", {})
    assert presented_call(call, tree, "/w").input == {"command": "pwd", "workdir": "/w/sub"}
    assert presented_call(call, tree, "/w/sub").input == {"command": "pwd"}
    assert presented_call(call, tree, None).input == {"command": "pwd"}
    given = HookCall("k", "c1", "Bash", {"command": "pwd", "workdir": "x"}, True, "/w/sub")
    assert presented_call(given, tree, "/w").input == {"command": "pwd", "workdir": "x"}


def test_a_denied_call_result_is_an_error() -> None:
    frame = seal_frame(
        frame_skeleton(operations=[{"op": "file.read"}])
    ).unwrap()  # fmt: skip
    desk, _ = present(open_desk("frame", frame), PresentedCall(call_id="c1", name="Bash", input={}, seam="hook",
                                                               operations=(Operation("shell"),)))  # fmt: skip
    result = ToolResult(exit_code=None, outcome_source=None, call_id="c1", is_error=None, content="blocked", bytes=7,
                        tool_use_result=None)  # fmt: skip
    assert denied_result(desk, result).is_error is True
    other = msgspec.structs.replace(result, call_id="c2")
    assert denied_result(desk, other).is_error is None


def test_a_sub_agent_rollout_yields_only_its_calls_and_results() -> None:
    reader = RolloutReader(launch=LAUNCH)
    lines = [
        {"type": "session_meta", "payload": {"id": "s", "cwd": "/w", "cli_version": "0.171.0"}},
        {"type": "event_msg", "payload": {"type": "task_started"}},
        {"type": "response_item", "payload": {"type": "function_call", "call_id": "c9", "name": "exec_command", "arguments": "{}"}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c9", "output": "ok"}},
        {"type": "event_msg", "payload": {"type": "agent_message", "message": "done"}},
    ]  # fmt: skip
    kinds = []
    for number, line in enumerate(lines, start=1):
        reader, readings = read_sub_agent_line(reader, json.dumps(line).encode(), number)
        kinds += [type(reading).__name__ for reading in readings]
    assert kinds == ["Announced", "Finished"]
