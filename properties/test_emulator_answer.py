"""Properties of the emulator's answer function (docs/loop.md#answer-function): it is a pure function of (scenario,
path, body, N), and every stream it renders is valid SSE on its wire."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.emulator.answer import answer_request
from metaharness.pure.emulator.scenarios import SCENARIO_NAMES

PATHS = ("/v1/responses", "/v1/messages")
TOOL_NAMES = ("file_read", "file_write", "run", "Write", "Read", "Bash", "exec_command", "shell", "apply_patch",
              "mcp__metaharness__file_write", "web_search")

texts = st.text(max_size=40)
json_scalars = st.none() | st.booleans() | st.integers() | texts
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(texts, inner, max_size=3), max_leaves=8)


@st.composite
def request_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """Bodies of either wire's shape with arbitrary extras: tools, results, reasoning, model, stream."""
    tools = [
        draw(st.sampled_from([
            {"type": "function", "name": name, "parameters": {"properties": {"argv": {"enum": ["git"]}}}},
            {"type": "custom", "name": name},
            {"name": name, "input_schema": {"type": "object"}},
        ]))
        for name in draw(st.lists(st.sampled_from(TOOL_NAMES), max_size=4))
    ]
    results = draw(st.integers(0, 3))
    user_text = draw(texts)
    body: dict[str, Any] = {
        "stream": draw(st.sampled_from([True, True, False, None])),
        "tools": tools,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": user_text}]},
                  *({"type": "function_call_output", "call_id": f"c{i}", "output": "x"} for i in range(results))],
        "messages": [{"role": "user", "content": user_text},
                     *({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}"}]}
                       for i in range(results))],
        "system": draw(st.sampled_from(["", "Working directory: /tmp/w x", [{"type": "text", "text": "s"}]])),
        "extra": draw(json_values),
    }
    model = draw(st.none() | st.text(min_size=1, max_size=12))
    if model is not None:
        body["model"] = model
    return body


def parse_sse(stream: bytes) -> list[tuple[str | None, str]]:
    """A strict SSE reader written for this test: frames end in a blank line, each line is a field."""
    assert stream.endswith(b"\n\n")
    frames = []
    for block in stream.decode("utf-8").split("\n\n")[:-1]:
        event, data = None, []
        for line in block.split("\n"):
            field, sep, value = line.partition(":")
            assert sep, f"a line without a field separator: {line!r}"
            value = value.removeprefix(" ")
            if field == "event":
                event = value
            else:
                assert field == "data", f"unexpected field {field!r}"
                data.append(value)
        assert data, "a frame without data"
        frames.append((event, "\n".join(data)))
    return frames


@settings(max_examples=60, deadline=None)
@given(scenario=st.sampled_from(SCENARIO_NAMES), path=st.sampled_from(PATHS), body=request_bodies(),
       n=st.integers(1, 50), other=request_bodies())
def test_the_answer_is_a_pure_function_of_scenario_path_body_and_n(
        scenario: str, path: str, body: dict[str, Any], n: int, other: dict[str, Any]) -> None:
    raw = json.dumps(body).encode()
    first = answer_request(scenario, "POST", path, (), raw, n)
    answer_request(scenario, "POST", path, (), json.dumps(other).encode(), n + 1)
    again = answer_request(scenario, "POST", path, (("user-agent", "any"),), bytes(raw), n)
    assert first == again


@settings(max_examples=80, deadline=None)
@given(scenario=st.sampled_from(SCENARIO_NAMES), path=st.sampled_from(PATHS), body=request_bodies(),
       n=st.integers(1, 50))
def test_every_stream_is_valid_sse_on_its_wire(scenario: str, path: str, body: dict[str, Any], n: int) -> None:
    body["stream"] = True
    answer = answer_request(scenario, "POST", path, (), json.dumps(body).encode(), n).answer
    if dict(answer.headers)["content-type"] != "text/event-stream":
        assert answer.status >= 400
        json.loads(answer.chunks[0])
        return
    whole = b"".join(answer.chunks)
    if answer.label == "stream:truncated":
        whole = whole[: whole.rindex(b"\n\n") + 2]
    frames = parse_sse(whole)
    if answer.label == "stream:malformed":
        assert frames[-1] == (None, "{not json")
        frames = frames[:-1]
    responses = path == "/v1/responses"
    if responses and answer.label not in ("stream:truncated", "stream:malformed"):
        assert frames[-1] == (None, "[DONE]")
        frames = frames[:-1]
    payloads = [json.loads(data) for _, data in frames]
    assert [event for event, _ in frames] == [p["type"] for p in payloads]
    if responses:
        assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
        assert all(p["type"].startswith("response.") for p in payloads)
    else:
        assert all(not p["type"].startswith("response.") for p in payloads)
    if answer.label in ("stream:truncated", "stream:malformed"):
        return
    last = payloads[-1]["type"]
    if responses:
        assert last in ("response.completed", "response.incomplete", "response.failed")
    else:
        assert last in ("message_stop", "error")
