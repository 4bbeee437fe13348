"""The emulator's scenarios for the loop's extensions (docs/loop-extensions.md): ``skill-load``,
``hooked-calls``, ``bridge-tool`` and ``bridge-unregistered``, on both wires, as pure answers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from metaharness.pure.emulator.answer import answer_request

WIRES = ["responses", "messages"]
SKILL_TOOL = {"name": "skill", "description": "Load a skill.",
              "schema": {"type": "object", "properties": {"name": {"type": "string", "enum": ["p:plan", "p:test"]}},
                         "required": ["name"]}}
CLIENT_TOOL = {"name": "lookup", "description": "Look up a word.",
               "schema": {"type": "object", "properties": {"word": {"type": "string"}, "n": {"type": "integer"}},
                          "required": ["word", "n"]}}


def loop_body(wire: str, results: int = 0, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A body as the loop sends it: instruction, user text, then ``results`` call/result pairs."""
    defined = tools if tools is not None else [{"name": "file_read", "description": "Read.", "schema": {}}]
    if wire == "responses":
        items: list[dict[str, Any]] = [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are b10x."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        ]
        for i in range(1, results + 1):
            items += [{"type": "function_call", "call_id": f"call_b10x_{i:03d}", "name": "x", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": f"call_b10x_{i:03d}", "output": "{}"}]
        return {"input": items, "model": "b10x-emulated", "stream": True,
                "tools": [{"type": "function", "name": t["name"], "description": t["description"],
                           "parameters": t["schema"]} for t in defined]}
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for i in range(1, results + 1):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_b10x_{i:03d}",
                                                        "name": "x", "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_b10x_{i:03d}",
                                                   "content": "{}", "is_error": False}]}]
    return {"max_tokens": 8192, "messages": messages, "model": "b10x-emulated", "stream": True,
            "system": [{"type": "text", "text": "You are b10x."}],
            "tools": [{"name": t["name"], "description": t["description"], "input_schema": t["schema"]}
                      for t in defined]}


def answered(scenario: str, wire: str, body: dict[str, Any], n: int = 1) -> list[dict[str, Any]]:
    """The stream's data payloads (``[DONE]`` left out)."""
    answer = answer_request(scenario, "POST", f"/v1/{wire}", (), json.dumps(body).encode(), n).answer
    assert answer.status == 200
    frames = b"".join(answer.chunks).decode().split("\n\n")[:-1]
    return [json.loads(frame.split("data: ", 1)[1]) for frame in frames if frame != "data: [DONE]"]


def text(stream: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] if isinstance(e["delta"], str) else e["delta"]["text"] for e in stream
                   if e["type"] in ("response.output_text.delta", "content_block_delta")
                   and (isinstance(e["delta"], str) or e["delta"]["type"] == "text_delta"))


def call(stream: list[dict[str, Any]]) -> tuple[str, str, str]:
    """(call id, name, argument text) of the stream's one call."""
    done = [e for e in stream if e["type"] == "response.output_item.done"]
    if done:
        item = done[0]["item"]
        return item["call_id"], item["name"], item["arguments"]
    start = next(e["content_block"] for e in stream if e["type"] == "content_block_start")
    deltas = [e["delta"]["partial_json"] for e in stream if e["type"] == "content_block_delta"]
    return start["id"], start["name"], "".join(deltas)


def with_user_turn(wire: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with a second user text after its results (a client's next turn)."""
    if wire == "responses":
        body["input"] += [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
                          {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]}]
    else:
        body["messages"] += [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                             {"role": "user", "content": [{"type": "text", "text": "again"}]}]
    return body


@pytest.mark.parametrize("wire", WIRES)
def test_skill_load_calls_the_first_offered_skill_then_answers(wire: str) -> None:
    assert call(answered("skill-load", wire, loop_body(wire, tools=[SKILL_TOOL])))[1:] == (
        "skill", '{"name":"p:plan"}')
    assert text(answered("skill-load", wire, loop_body(wire, results=1), n=2)) == "the skill is loaded"
    assert text(answered("skill-load", wire, loop_body(wire))) == "no skill was offered"


@pytest.mark.parametrize("wire", WIRES)
def test_hooked_calls_reads_then_writes_then_answers(wire: str) -> None:
    assert call(answered("hooked-calls", wire, loop_body(wire)))[1:] == ("file_read", '{"path":"README.md"}')
    assert call(answered("hooked-calls", wire, loop_body(wire, results=1)))[1:] == (
        "file_write", json.dumps({"path": "note.md", "text": "written past the hooks\n"}, separators=(",", ":")))
    assert text(answered("hooked-calls", wire, loop_body(wire, results=2))) == "the hooks have had their say"


@pytest.mark.parametrize("wire", WIRES)
def test_bridge_tool_calls_the_client_tool_on_each_user_turn(wire: str) -> None:
    assert call(answered("bridge-tool", wire, loop_body(wire, tools=[CLIENT_TOOL])))[1:] == (
        "lookup", '{"word":"from the emulator"}')
    after_result = loop_body(wire, results=1, tools=[CLIENT_TOOL])
    assert text(answered("bridge-tool", wire, after_result, n=2)) == "the client tool answered"
    next_turn = call(answered("bridge-tool", wire, with_user_turn(wire, after_result), n=3))
    assert next_turn[0].endswith("002") and next_turn[1] == "lookup"
    assert text(answered("bridge-tool", wire, loop_body(wire, tools=[]))) == "no tool was offered"


@pytest.mark.parametrize("wire", WIRES)
def test_bridge_unregistered_calls_a_tool_no_client_registers(wire: str) -> None:
    assert call(answered("bridge-unregistered", wire, loop_body(wire)))[1:] == ("unregistered_tool", "{}")
    later = answered("bridge-unregistered", wire, loop_body(wire, results=1), n=2)
    assert text(later) == "I see, that tool is not registered."
