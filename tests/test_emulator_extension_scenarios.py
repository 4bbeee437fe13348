"""The emulator's scenarios for the loop's extensions (docs/loop-extensions.md): ``skill-load``,
``hooked-calls``, ``bridge-tool`` and ``bridge-unregistered``, on both wires, as pure answers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_emulator_scenarios import ask, call_of, events, loop_body, text_of

WIRES = ["responses", "messages"]
SKILL_TOOL = {"name": "skill", "description": "Load a skill.",
              "schema": {"type": "object", "properties": {"name": {"type": "string", "enum": ["p:plan", "p:test"]}},
                         "required": ["name"]}}
CLIENT_TOOL = {"name": "lookup", "description": "Look up a word.",
               "schema": {"type": "object", "properties": {"word": {"type": "string"}, "n": {"type": "integer"}},
                          "required": ["word", "n"]}}


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
    assert call_of(events(ask("skill-load", wire, loop_body(wire, tools=[SKILL_TOOL]))))[1:] == (
        "skill", '{"name":"p:plan"}')
    assert "".join(text_of(events(ask("skill-load", wire, loop_body(wire, results=1), n=2)))) == "the skill is loaded"
    assert "".join(text_of(events(ask("skill-load", wire, loop_body(wire))))) == "no skill was offered"


@pytest.mark.parametrize("wire", WIRES)
def test_hooked_calls_reads_then_writes_then_answers(wire: str) -> None:
    assert call_of(events(ask("hooked-calls", wire, loop_body(wire))))[1:] == ("file_read", '{"path":"README.md"}')
    assert call_of(events(ask("hooked-calls", wire, loop_body(wire, results=1))))[1:] == (
        "file_write", json.dumps({"path": "note.md", "text": "written past the hooks\n"}, separators=(",", ":")))
    assert "".join(text_of(events(ask("hooked-calls", wire, loop_body(wire, results=2))))) == (
        "the hooks have had their say")


@pytest.mark.parametrize("wire", WIRES)
def test_bridge_tool_calls_the_client_tool_on_each_user_turn(wire: str) -> None:
    first = events(ask("bridge-tool", wire, loop_body(wire, tools=[CLIENT_TOOL])))
    assert call_of(first)[1:] == ("lookup", '{"word":"from the emulator"}')
    answered = loop_body(wire, results=1, tools=[CLIENT_TOOL])
    assert "".join(text_of(events(ask("bridge-tool", wire, answered, n=2)))) == "the client tool answered"
    assert call_of(events(ask("bridge-tool", wire, with_user_turn(wire, answered), n=3)))[0].endswith("002")
    assert "".join(text_of(events(ask("bridge-tool", wire, loop_body(wire, tools=[]))))) == "no tool was offered"


@pytest.mark.parametrize("wire", WIRES)
def test_bridge_unregistered_calls_a_tool_no_client_registers(wire: str) -> None:
    assert call_of(events(ask("bridge-unregistered", wire, loop_body(wire))))[1:] == ("unregistered_tool", "{}")
    later = events(ask("bridge-unregistered", wire, loop_body(wire, results=1), n=2))
    assert "".join(text_of(later)) == "I see, that tool is not registered."
