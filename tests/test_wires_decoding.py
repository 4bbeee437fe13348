"""Decoder and projection rules beyond the contract streams (docs/loop.md#openai-responses,
#anthropic-messages, #credentials)."""

from __future__ import annotations

import json

from metaharness.pure.wires import anthropic_messages as messages
from metaharness.pure.wires import openai_responses as responses
from metaharness.pure.wires.neutral import (
    Opaque,
    Outcome,
    ProviderStop,
    Sampling,
    StreamText,
    StreamWarning,
    ToolCall,
    TurnRequest,
    UserText,
    WireError,
)
from metaharness.pure.wires.sse import frame_sse


def sse(*payloads: object, done: bool = False) -> bytes:
    body = b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads)
    return body + (b"data: [DONE]\n\n" if done else b"")


def decode_responses(data: bytes) -> list[object]:
    return list(responses.decode_stream(frame_sse([data]), "asked-model"))


def decode_messages(data: bytes) -> list[object]:
    return list(messages.decode_stream(frame_sse([data]), "asked-model"))


COMPLETED = {"type": "response.completed", "response": {"status": "completed", "output": []}}


def test_responses_done_before_a_terminal_is_truncated() -> None:
    [error] = decode_responses(sse({"type": "response.created"}, done=True))
    assert isinstance(error, WireError) and error.error == "truncated" and error.retriable


def test_responses_eof_after_a_terminal_without_done_is_accepted() -> None:
    [outcome] = decode_responses(sse(COMPLETED))
    assert outcome == Outcome((), ProviderStop("end-turn"), None, "asked-model")


def test_responses_first_terminal_decides() -> None:
    second = {"type": "response.incomplete", "response": {"status": "incomplete"}}
    [outcome] = decode_responses(sse(COMPLETED, second, done=True))
    assert isinstance(outcome, Outcome) and outcome.stop == ProviderStop("end-turn")


def test_responses_unknown_event_warns_and_continues() -> None:
    events = decode_responses(sse({"type": "response.emulator_note"}, COMPLETED, done=True))
    assert isinstance(events[0], StreamWarning) and events[0].code == "unknown-stream-event"
    assert isinstance(events[1], Outcome)


def test_responses_non_json_payload_is_protocol() -> None:
    [error] = decode_responses(b'data: {"type":"response.created"}\n\ndata: {not json\n\n')
    assert isinstance(error, WireError) and error.error == "protocol"


def test_responses_invalid_call_arguments_are_protocol_and_empty_ones_are_an_object() -> None:
    bad = {"type": "function_call", "call_id": "c", "name": "file_read", "arguments": "{not json"}
    [error] = decode_responses(sse({"type": "response.completed", "response": {"output": [bad]}}))
    assert isinstance(error, WireError) and error.error == "protocol"
    empty = {**bad, "arguments": ""}
    [outcome] = decode_responses(sse({"type": "response.completed", "response": {"output": [empty]}}))
    assert isinstance(outcome, Outcome) and outcome.items == (ToolCall("c", "file_read", {}),)
    assert outcome.stop == ProviderStop("tool-calls")


DEEP = "[" * 5000 + "]" * 5000
"""10 KB of JSON nested past any decoder's recursion: a model's answer may hold it anywhere."""


def test_a_payload_nested_past_the_bound_is_a_protocol_error_on_every_wire() -> None:
    """docs/cli.md#bounds-on-what-a-run-reads: an event's error, response or call arguments nested 5,000 deep
    are the wire's protocol error, never a ``RecursionError``."""
    failed = b'data: {"type":"response.failed","error":' + DEEP.encode() + b"}\n\n"
    completed = b'data: {"type":"response.completed","response":{"output":' + DEEP.encode() + b"}}\n\n"
    call = {"type": "function_call", "call_id": "c", "name": "file_read", "arguments": DEEP}
    for body in (failed, completed, sse({"type": "response.completed", "response": {"output": [call]}})):
        [error] = decode_responses(body)
        assert isinstance(error, WireError) and error.error == "protocol", error
    deep_event = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":" + DEEP.encode() + b"}\n\n"
    assert all(isinstance(event, WireError) for event in decode_messages(deep_event)[-1:])


def test_responses_output_item_done_stands_in_for_an_empty_terminal_output() -> None:
    item = {"type": "message", "content": [{"type": "output_text", "text": "hi"}]}
    [outcome] = decode_responses(sse({"type": "response.output_item.done", "item": item}, COMPLETED))
    assert isinstance(outcome, Outcome) and outcome.items[0].text == "hi"  # type: ignore[union-attr]


def test_responses_unknown_output_item_is_opaque_with_a_warning() -> None:
    item = {"type": "web_search_call", "id": "ws"}
    events = decode_responses(sse({"type": "response.completed", "response": {"output": [item]}}))
    assert isinstance(events[0], StreamWarning) and events[0].code == "unknown-output-item"
    assert isinstance(events[1], Outcome) and events[1].items == (Opaque("openai-responses", item),)


def test_responses_other_incomplete_reason_is_incomplete() -> None:
    terminal = {"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "content_filter"}}}
    [outcome] = decode_responses(sse(terminal))
    assert isinstance(outcome, Outcome) and outcome.stop == ProviderStop("incomplete", "content_filter")


def test_messages_done_payload_is_protocol_and_eof_before_stop_truncated() -> None:
    [error] = decode_messages(b"data: [DONE]\n\n")
    assert isinstance(error, WireError) and error.error == "protocol"
    [error] = decode_messages(sse({"type": "message_start", "message": {}}))
    assert isinstance(error, WireError) and error.error == "truncated"


def test_messages_errors_map_by_type() -> None:
    for kind, expected in (("overloaded_error", "rate-limited"), ("api_error", "transport"), ("invalid_request_error", "refused")):
        [error] = decode_messages(sse({"type": "error", "error": {"type": kind, "message": "m"}}))
        assert isinstance(error, WireError) and error.error == expected


def test_messages_refusal_stop_warns_with_category_and_explanation() -> None:
    events = decode_messages(
        sse(
            {"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_details": {"category": "cyber", "explanation": "no"}}},
            {"type": "message_stop"},
        )
    )
    assert events[0] == StreamWarning("provider-refusal", "Provider declined the response. Category: cyber Explanation: no")
    assert isinstance(events[1], Outcome) and events[1].stop == ProviderStop("incomplete", "refusal")
    assert events[1].usage is None and events[1].model == "asked-model"


def test_messages_end_turn_with_calls_is_tool_calls() -> None:
    events = decode_messages(
        sse(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "find", "input": {}}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
            {"type": "message_stop"},
        )
    )
    assert isinstance(events[-1], Outcome) and events[-1].stop == ProviderStop("tool-calls")
    assert events[-1].items == (ToolCall("t", "find", {}),)


def test_messages_thinking_without_signature_keeps_only_deltas() -> None:
    events = decode_messages(
        sse(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}},
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "ok"}},
            {"type": "content_block_stop", "index": 1},
            {"type": "message_stop"},
        )
    )
    assert isinstance(events[1], StreamText)
    assert isinstance(events[-1], Outcome) and [type(i).__name__ for i in events[-1].items] == ["AssistantText"]


REQUEST = TurnRequest("m", "i", (UserText("hi"),), ())


def test_cross_wire_opaque_is_a_typed_refusal() -> None:
    request = TurnRequest("m", "i", (UserText("hi"), Opaque("openai-responses", {"type": "reasoning"})), ())
    error = messages.project_request(request, None).failure()
    assert error == WireError(
        "cross-wire", "item 2 is an opaque `openai-responses` item and cannot be replayed into `anthropic-messages`"
    )
    request = TurnRequest("m", "i", (Opaque("anthropic-messages", {"type": "thinking"}),), ())
    assert responses.project_request(request, "S").failure().error == "cross-wire"


def test_preflight_ranges_differ_per_wire() -> None:
    warm = TurnRequest("m", "i", (UserText("hi"),), (), Sampling(temperature=1.5))
    assert responses.project_request(warm, "S").unwrap().body.count(b'"temperature":1.5') == 1
    assert messages.project_request(warm, None).failure().error == "refused"
    zero_p = TurnRequest("m", "i", (UserText("hi"),), (), Sampling(top_p=0.0))
    assert responses.project_request(zero_p, "S").failure().error == "refused"
    assert messages.project_request(zero_p, None).failure().error == "refused"
    empty_effort = TurnRequest("m", "i", (UserText("hi"),), (), Sampling(effort=""))
    assert responses.project_request(empty_effort, "S").failure().error == "refused"


def test_unset_sampling_is_not_sent_and_no_tool_choice_ever() -> None:
    body = responses.project_request(REQUEST, "S").unwrap().body
    for absent in (b"temperature", b"top_p", b'"reasoning":', b"max_output_tokens", b"tool_choice"):
        assert absent not in body
    body = messages.project_request(REQUEST, None).unwrap().body
    assert b'"max_tokens":8192' in body and b"tool_choice" not in body and b"output_config" not in body


def test_oauth_headers_and_identity_block() -> None:
    headers = messages.request_headers("oauth", "tok")
    assert headers[-2:] == (("authorization", "Bearer tok"), ("anthropic-beta", "oauth-2025-04-20"))
    body = json.loads(messages.project_request(REQUEST, "oauth").unwrap().body)
    assert body["system"][0] == {"type": "text", "text": messages.OAUTH_IDENTITY}
    assert messages.request_headers(None, None)[-1] == ("anthropic-version", "2023-06-01")
    assert responses.request_headers("S", None)[-1] == ("x-client-request-id", "S")


def test_each_wire_refuses_sampling_out_of_its_range_in_words() -> None:
    from_range = TurnRequest("m", "i", (UserText("hi"),), (), Sampling(temperature=1.5))
    assert messages.project_request(from_range, None).failure() == WireError(
        "refused", "temperature 1.5 is outside 0..1 on anthropic-messages"
    )
    assert responses.project_request(from_range, "s").unwrap().body.count(b"\"temperature\":1.5") == 1
    hot = TurnRequest("m", "i", (UserText("hi"),), (), Sampling(temperature=2.5, top_p=0.0))
    assert responses.project_request(hot, "s").failure() == WireError(
        "refused", "temperature 2.5 is outside 0..2 on openai-responses"
    )
    narrow = TurnRequest("m", "i", (UserText("hi"),), (), Sampling(top_p=0.0))
    assert messages.project_request(narrow, None).failure() == WireError(
        "refused", "top_p 0.0 is outside (0, 1] on anthropic-messages"
    )
