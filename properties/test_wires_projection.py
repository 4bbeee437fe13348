"""Request projection is byte-stable: the same neutral turn gives the same canonical bytes (docs/loop.md#model-port)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.jsonline import canonical
from metaharness.pure.wires import anthropic_messages, openai_responses
from metaharness.pure.wires.neutral import (
    AssistantText,
    Item,
    Sampling,
    ToolCall,
    ToolResult,
    ToolSpec,
    TurnRequest,
    UserText,
)

TEXT = st.text(max_size=20)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
ITEM: st.SearchStrategy[Item] = st.one_of(
    st.builds(UserText, TEXT),
    st.builds(AssistantText, TEXT),
    st.builds(ToolCall, TEXT, TEXT, st.dictionaries(TEXT, JSON_VALUE, max_size=3)),
    st.builds(ToolResult, TEXT, TEXT, st.booleans()),
)
REQUESTS = st.builds(
    TurnRequest,
    TEXT,
    TEXT,
    st.lists(ITEM, max_size=6).map(tuple),
    st.lists(st.builds(ToolSpec, TEXT, TEXT, st.dictionaries(TEXT, JSON_VALUE, max_size=3)), max_size=3).map(tuple),
    st.builds(
        Sampling,
        st.none() | st.floats(0, 1),
        st.none() | st.floats(0.01, 1),
        st.none() | st.sampled_from(["low", "high"]),
        st.none() | st.integers(1, 100000),
    ),
)


def _reordered(request: TurnRequest) -> TurnRequest:
    """The same request rebuilt from JSON with every object's keys reversed."""

    def reverse(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: reverse(value[k]) for k in reversed(list(value))}
        if isinstance(value, list):
            return [reverse(v) for v in value]
        return value

    raw = reverse(json.loads(msgspec.json.encode(request)))
    return msgspec.json.decode(json.dumps(raw).encode(), type=TurnRequest)


@settings(max_examples=150, deadline=None)
@given(REQUESTS)
def test_responses_projection_is_byte_stable_and_canonical(request: TurnRequest) -> None:
    body = openai_responses.project_request(request, "S").unwrap().body
    assert body == openai_responses.project_request(request, "S").unwrap().body
    assert body == canonical(json.loads(body)) + b"\n"
    reordered = openai_responses.project_request(_reordered(request), "S").unwrap().body
    assert _with_parsed_arguments(reordered) == _with_parsed_arguments(body)


def _with_parsed_arguments(body: bytes) -> Any:
    """The body as JSON with each call's argument string (compact in the model's key order) parsed."""
    value = json.loads(body)
    for item in value["input"]:
        if item.get("type") == "function_call":
            item["arguments"] = json.loads(item["arguments"])
    return value


@settings(max_examples=150, deadline=None)
@given(REQUESTS)
def test_messages_projection_is_byte_stable_and_key_order_free(request: TurnRequest) -> None:
    body = anthropic_messages.project_request(request, "api-key").unwrap().body
    assert body == anthropic_messages.project_request(request, "api-key").unwrap().body
    assert body == canonical(json.loads(body)) + b"\n"
    assert anthropic_messages.project_request(_reordered(request), "api-key").unwrap().body == body
