"""The command stream: framing refusals, well-formedness, adapter support, the command.result
payloads and the start-time refusal (docs/events.md#commands)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from returns.result import Failure, Success

from metaharness.pure.commands import (
    COMMAND_NAMES,
    FrameSet,
    Halt,
    Interrupt,
    MessageInject,
    PermissionSet,
    Steer,
    ToolDecide,
    UnreadableCommand,
    check_supported,
    check_well_formed,
    command_ok,
    commands_needed,
    control_unsupported,
    frame_set_ok,
    read_command,
    start_time_refusals,
    steering_refusal,
    too_late,
    unknown_call,
    unreadable_command,
    unsupported_control,
)
from metaharness.pure.events import Allow, Deny, EventValue, Replace, Stream
from metaharness.pure.frames import frame_document, seal_frame
from metaharness.pure.refusal import Refusal
from metaharness.pure.stream_writer import write_line

B10X_HONOURED = ("tool.decide", "interrupt", "halt")


def line(**fields: Any) -> bytes:
    return json.dumps({"format": "metaharness.command/1", **fields}).encode()


def sealed_frame_object() -> dict[str, Any]:
    document = {
        "format": "metaharness.frame/1",
        "workflow": {"id": "w", "version": "1"},
        "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [],
        "obligations": [],
        "reaching": [],
        "next": [],
        "handoff": {"handoff": "none"},
        "operations": [{"op": "file.read"}],
    }
    return json.loads(frame_document(seal_frame(document).unwrap()))


def test_the_spec_example_command_reads() -> None:
    example = (
        b'{"format":"metaharness.command/1","id":"c1","command":"tool.decide","call_id":"call_b10x_001",'
        b'"decision":{"decision":"deny","reason":"notes are written in the next step"}}'
    )
    assert read_command(example) == Success(
        ToolDecide(id="c1", call_id="call_b10x_001", decision=Deny("notes are written in the next step"))
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"id": "a", "command": "tool.decide", "call_id": "x", "decision": {"decision": "allow"}}, ToolDecide(id="a", call_id="x", decision=Allow())),
        ({"id": "a", "command": "tool.decide", "call_id": "x", "decision": {"decision": "replace", "input": {"b": 1, "a": 2}}}, ToolDecide(id="a", call_id="x", decision=Replace({"b": 1, "a": 2}))),
        ({"id": "b", "command": "message.inject", "text": "hi"}, MessageInject(id="b", text="hi")),
        ({"id": "c", "command": "steer", "text": "left"}, Steer(id="c", text="left")),
        ({"id": "d", "command": "permission.set", "posture": "plan"}, PermissionSet(id="d", posture="plan")),
        ({"id": "e", "command": "interrupt", "reason": "enough", "extra": [1]}, Interrupt(id="e", reason="enough")),
        ({"id": "f", "command": "halt", "reason": "stop"}, Halt(id="f", reason="stop")),
        ({"id": "g", "command": "frame.set", "frame": {"k": 1}}, FrameSet(id="g", frame={"k": 1})),
    ],
)
def test_each_command_reads_and_unknown_fields_are_ignored(fields: dict[str, Any], expected: object) -> None:
    assert read_command(line(**fields)) == Success(expected)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"[1]", "not a JSON object: the document is JSON but not an object"),
        (b'{"id":"a","command":"halt","reason":"r"}', 'no format tag, expected "metaharness.command/1"'),
        (b'{"format":"metaharness.event/1","id":"a","command":"halt","reason":"r"}', 'unknown format tag "metaharness.event/1", expected "metaharness.command/1"'),
        (b'{"format":7}', 'unknown format tag "<not a string>", expected "metaharness.command/1"'),
        (line(id="a", command="resume"), 'unknown command name "resume"'),
        (line(id="a"), 'unknown command name "<not a string>"'),
        (line(id="a", command="halt"), "malformed halt: Object missing required field `reason`"),
        (line(command="halt", reason="r"), "malformed halt: Object missing required field `id`"),
        (line(id="a", command="tool.decide", call_id="x", decision={"decision": "maybe"}), "malformed tool.decide: Invalid value 'maybe' - at `$.decision.decision`"),
        (line(id="a", command="frame.set", frame=[1]), "malformed frame.set: Expected `object`, got `array` - at `$.frame`"),
    ],
)
def test_framing_refusals(data: bytes, error: str) -> None:
    assert read_command(data) == Failure(error)


def test_framing_refusal_of_bad_json_carries_the_parser_detail() -> None:
    error = read_command(b"{oops").failure()
    assert error.startswith("not a JSON object: ") and len(error) > len("not a JSON object: ")
    assert steering_refusal(error) == f"metaharness: the steering line was refused: {error}"


@pytest.mark.parametrize("reason", ["", "   ", "\n\t"])
def test_a_deny_without_a_reason_is_malformed(reason: str) -> None:
    refused = check_well_formed(ToolDecide(id="c9", call_id="x", decision=Deny(reason))).failure()
    assert json.loads(write_line(Stream("r"), EventValue(refused))[1])["outcome"] == {
        "result": "refused",
        "refused": {
            "code": "MALFORMED",
            "reason": "a deny must carry a non-empty reason: the reason is the only part the model can act on, "
            "and it is the difference between a wall and an instruction",
        },
    }


def test_a_sealed_frame_set_is_well_formed_with_or_without_its_tag() -> None:
    document = sealed_frame_object()
    checked = check_well_formed(FrameSet(id="f1", frame=document)).unwrap()
    assert checked.frame is not None and checked.frame.digest == document["digest"]
    del document["format"]
    assert isinstance(check_well_formed(FrameSet(id="f1", frame=document)), Success)


def test_a_mutated_frame_set_is_malformed_with_the_mutation_reason() -> None:
    document = sealed_frame_object()
    document["node"]["id"] = "elsewhere"
    refused = check_well_formed(FrameSet(id="f2", frame=document)).failure()
    assert refused.outcome.refused.code == "MALFORMED"
    assert refused.outcome.refused.reason == (
        "the frame's digest does not describe its contents, so it was mutated after it was sealed"
    )


def test_a_misshapen_frame_set_is_malformed_with_the_load_message() -> None:
    document = sealed_frame_object()
    document["colour"] = "red"
    refused = check_well_formed(FrameSet(id="f3", frame=document)).failure()
    assert refused.outcome.refused.reason == 'not a frame: unknown field "colour"'
    document = sealed_frame_object()
    document["format"] = "metaharness.frame/9"
    refused = check_well_formed(FrameSet(id="f3", frame=document)).failure()
    assert refused.outcome.refused.reason == 'unknown format tag "metaharness.frame/9", expected "metaharness.frame/1"'


def test_other_commands_are_well_formed() -> None:
    assert check_well_formed(Steer(id="s", text="")).unwrap().frame is None


def test_adapter_support() -> None:
    steer = Steer(id="c2", text="left")
    assert check_supported(steer, "b10x", B10X_HONOURED) == Failure(unsupported_control("c2", "b10x", "steer"))
    assert check_supported(Halt(id="h", reason="r"), "b10x", B10X_HONOURED) == Success(Halt(id="h", reason="r"))


def test_results_are_the_spec_bytes() -> None:
    stream = Stream("b10x-48213", written=6)
    assert write_line(stream, EventValue(command_ok("c1")))[1] == (
        b'{"format":"metaharness.event/1","seq":7,"run":"b10x-48213","event":"command.result","id":"c1",'
        b'"outcome":{"result":"ok","applies_at":null}}\n'
    )
    assert write_line(Stream("b10x-48213", written=8), EventValue(unsupported_control("c2", "b10x", "steer")))[1] == (
        b'{"format":"metaharness.event/1","seq":9,"run":"b10x-48213","event":"command.result","id":"c2",'
        b'"outcome":{"result":"refused","refused":{"code":"UNSUPPORTED_CONTROL","reason":"the b10x adapter cannot honour steer"}}}\n'
    )
    assert frame_set_ok("f").outcome.applies_at == "the next turn or step boundary"
    assert unknown_call("c", "call_9").outcome.refused.reason == "call_9 does not correlate to an open request"
    assert too_late("c", "call_9").outcome.refused.reason == (
        "call_9 was decided or its window closed; a decision cannot be replayed"
    )


@pytest.mark.parametrize(
    ("decisions", "frame_named", "needed"),
    [
        ("frame", False, ("interrupt", "halt")),
        ("frame", True, ("tool.decide", "interrupt", "halt")),
        ("ask", False, ("tool.decide", "interrupt", "halt")),
        ("observe", False, ("tool.decide", "interrupt", "halt")),
    ],
)
def test_commands_a_run_needs(decisions: str, frame_named: bool, needed: tuple[str, ...]) -> None:
    assert commands_needed(decisions, frame_named) == needed


def test_start_time_refusals_name_each_refused_command() -> None:
    assert start_time_refusals("ask", False, "b10x", B10X_HONOURED) == ()
    refused = start_time_refusals("ask", False, "toy", ("halt",))
    assert [r.id for r in refused] == ["start/tool.decide", "start/interrupt"]
    assert control_unsupported(refused) == Refusal(
        "control-unsupported", "the toy adapter cannot honour tool.decide; the toy adapter cannot honour interrupt"
    )


def test_the_seven_commands_in_spec_order() -> None:
    assert COMMAND_NAMES == ("tool.decide", "frame.set", "message.inject", "steer", "permission.set", "interrupt", "halt")


def test_a_line_framing_refuses_with_an_id_is_still_answered_malformed() -> None:
    line = b'{"format":"metaharness.command/1","id":"d1","command":"tool.decide","call_id":"c","decision":{"decision":"deny"}}'
    error = read_command(line).failure()
    unreadable = unreadable_command(line, error)
    assert unreadable == UnreadableCommand("d1", error)
    refused = check_well_formed(unreadable).failure()
    assert refused.id == "d1" and refused.outcome.refused.code == "MALFORMED" and refused.outcome.refused.reason == error


@pytest.mark.parametrize("line", [b"{oops", b"[1]", b'{"id":7,"command":"halt"}', b'{"command":"halt"}'])
def test_a_line_without_a_string_id_gets_only_the_stderr_line(line: bytes) -> None:
    assert unreadable_command(line, "whatever") is None
