"""The production framer, decoders and projections against the unseen provider's bytes and validators.

Every style's stream is fed whole, one byte at a time and in odd-sized chunks (UTF-8 and partial JSON
split anywhere); the decoded turn, answered with tool results, is projected again and must pass the
provider's own request validation, as the real services would judge it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import pytest
from providers.unseen import (
    FINAL,
    NOTE,
    STYLES,
    Call,
    Part,
    Style,
    Text,
    frame_events,
    messages_events,
    messages_results,
    responses_events,
    responses_results,
)
from returns.result import Success

from metaharness.pure.wires import anthropic_messages, openai_responses
from metaharness.pure.wires.neutral import (
    AssistantText,
    Item,
    Outcome,
    StreamArguments,
    StreamText,
    ToolCall,
    ToolResult,
    ToolSpec,
    TurnRequest,
    UserText,
    WireError,
)
from metaharness.pure.wires.sse import frame_sse

WRITE: list[Part] = [Call("file_write", {"path": "note.md", "text": NOTE})]
TOOL = ToolSpec("file_write", "Create or replace a whole text file in the workspace.", {
    "type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
    "required": ["path", "text"], "additionalProperties": False,
})


def stream_bytes(wire: str, parts: list[Part], style: Style) -> bytes:
    if wire == openai_responses.WIRE:
        return frame_events(responses_events(parts, "m", "seed", style), style, style.done_sentinel)
    return frame_events(messages_events(parts, "m", "seed", style), style, False)


def decode(wire: str, chunks: list[bytes]) -> list[Any]:
    module = openai_responses if wire == openai_responses.WIRE else anthropic_messages
    return list(module.decode_stream(frame_sse(chunks), request_model="m"))


def chunkings(data: bytes) -> list[list[bytes]]:
    return [[data], [data[i : i + 1] for i in range(len(data))], [data[i : i + 7] for i in range(0, len(data), 7)]]


def validate(wire: str, items: list[Item]) -> list[Any]:
    request = TurnRequest("m", "You are b10x-harness.", tuple(items), (TOOL,))
    if wire == openai_responses.WIRE:
        projected = openai_responses.project_request(request, "b10x-1-2")
        check: Callable[[dict[str, Any]], list[Any]] = responses_results
    else:
        projected = anthropic_messages.project_request(request, "api-key")
        headers = dict(anthropic_messages.request_headers("api-key", "k"))
        def check(body: dict[str, Any]) -> list[Any]:
            return messages_results(body, headers)
    assert isinstance(projected, Success)
    return check(msgspec.json.decode(projected.unwrap().body))


@pytest.mark.parametrize("wire", [openai_responses.WIRE, anthropic_messages.WIRE])
@pytest.mark.parametrize("style", STYLES, ids=[s.name for s in STYLES])
def test_every_chunking_decodes_to_the_same_call_and_the_answered_turn_is_accepted(wire: str, style: Style) -> None:
    data = stream_bytes(wire, WRITE, style)
    decoded = [decode(wire, chunks) for chunks in chunkings(data)]
    assert decoded[1] == decoded[0] and decoded[2] == decoded[0]
    *deltas, outcome = decoded[0]
    assert isinstance(outcome, Outcome), outcome
    calls = [item for item in outcome.items if isinstance(item, ToolCall)]
    assert [(c.name, c.arguments) for c in calls] == [("file_write", {"path": "note.md", "text": NOTE})]
    assert "".join(d.delta for d in deltas if isinstance(d, StreamArguments)) == msgspec.json.encode(WRITE[0].arguments).decode()
    assert all(d.call_id == calls[0].call_id for d in deltas if isinstance(d, StreamArguments))
    answered = [UserText("write the note"), *outcome.items, ToolResult(calls[0].call_id, '{"path":"note.md","bytes":3}', False)]
    [result] = validate(wire, answered)
    assert result.call_id == calls[0].call_id and not result.is_error


@pytest.mark.parametrize("wire", [openai_responses.WIRE, anthropic_messages.WIRE])
def test_a_final_text_split_inside_code_points_comes_out_whole(wire: str) -> None:
    style = STYLES[2]
    data = stream_bytes(wire, [Text(FINAL)], style)
    for chunks in chunkings(data):
        *deltas, outcome = decode(wire, chunks)
        assert "".join(d.text for d in deltas if isinstance(d, StreamText)) == FINAL
        assert isinstance(outcome, Outcome) and outcome.items == (AssistantText(FINAL),)


def test_messages_an_empty_text_block_leaves_no_item_so_the_next_request_is_accepted() -> None:
    """The Messages API refuses an empty text block sent back; the decoder must not keep one."""
    style = next(s for s in STYLES if s.empty_text_block)
    *_, outcome = decode(anthropic_messages.WIRE, [stream_bytes(anthropic_messages.WIRE, WRITE, style)])
    assert isinstance(outcome, Outcome)
    assert [type(item) for item in outcome.items] == [ToolCall]
    call = outcome.items[0]
    assert isinstance(call, ToolCall)
    validate(anthropic_messages.WIRE, [UserText("go"), *outcome.items, ToolResult(call.call_id, "ok", False)])


def test_responses_a_stream_cut_before_completed_is_truncated() -> None:
    """A stream cut before ``response.completed`` is truncated whatever the provider's framing."""
    data = stream_bytes(openai_responses.WIRE, WRITE, STYLES[1])
    cut = data[: data.index(b"response.completed") - 40]
    [*_, error] = decode(openai_responses.WIRE, [cut])
    assert isinstance(error, WireError) and error.error == "truncated"


def test_responses_decoding_ends_at_the_terminal_without_waiting_for_more_bytes() -> None:
    """A peer that neither sends ``[DONE]`` nor ends the body after ``response.completed`` is not waited for."""
    style = next(s for s in STYLES if s.holds_connection_open)
    data = stream_bytes(openai_responses.WIRE, WRITE, style)
    pulled: list[bytes] = []

    def endless() -> Iterator[bytes]:
        yield data
        while len(pulled) < 100:
            pulled.append(b": keep-alive\n\n")
            yield pulled[-1]
        raise AssertionError("the decoder kept reading after the terminal")

    *_, outcome = openai_responses.decode_stream(frame_sse(endless()), request_model="m")
    assert isinstance(outcome, Outcome) and pulled == []
