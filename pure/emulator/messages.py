"""The emulator's ``anthropic-messages`` rendering (docs/loop.md#answer-function): complete Messages API objects, so
real clients (the b10x loop, Claude Code) accept them. Written independently of the loop's decoder."""

from __future__ import annotations

from typing import Any

import msgspec

from metaharness.pure.emulator.reply import Call, Ids, ProviderError, Reply
from metaharness.pure.jsonline import compact

_ERROR_TYPES = {
    "authentication": "authentication_error",
    "overloaded": "overloaded_error",
    "invalid-request": "invalid_request_error",
}


def _input(call: Call) -> Any:
    """The call's arguments as the ``input`` value, or the raw text when it is not JSON."""
    try:
        return msgspec.json.decode(call.arguments)
    except msgspec.DecodeError:
        return call.arguments


def _stop_reason(reply: Reply) -> str:
    if reply.incomplete:
        return "max_tokens"
    return "tool_use" if reply.call is not None else "end_turn"


def content_blocks(reply: Reply, ids: Ids) -> list[dict[str, Any]]:
    """The message's content: thinking, text, tool use, in that order, each when present."""
    blocks: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        blocks.append({"type": "thinking", "thinking": reply.reasoning.summary,
                       "signature": reply.reasoning.blob})
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    if reply.call is not None:
        blocks.append({"type": "tool_use", "id": ids.call_id("toolu"), "name": reply.call.name,
                       "input": _input(reply.call)})
    for number, call in enumerate(reply.parallel, start=1):
        blocks.append({"type": "tool_use", "id": f"{ids.call_id('toolu')}_{number}", "name": call.name,
                       "input": _input(call)})
    return blocks


def _message(reply: Reply, ids: Ids, content: list[dict[str, Any]], stop: str | None,
             output_tokens: int) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": ids.response_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": ids.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
    }
    if reply.usage:
        message["usage"] = {"input_tokens": 35, "cache_read_input_tokens": 7, "output_tokens": output_tokens}
    return message


def message_body(reply: Reply, ids: Ids) -> dict[str, Any]:
    """The non-streaming answer: one Message object."""
    return _message(reply, ids, content_blocks(reply, ids), _stop_reason(reply), reply.output_tokens)


def _call_index(reply: Reply) -> int:
    """The content index of the reply's first call (after its thinking and text blocks)."""
    return int(reply.reasoning is not None) + int(bool(reply.text))


def _block_events(block: dict[str, Any], index: int, reply: Reply) -> list[dict[str, Any]]:
    """``content_block_start``, the block's deltas, ``content_block_stop``."""
    kind = block["type"]
    if kind == "thinking":
        opening: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
        deltas: list[dict[str, Any]] = [{"type": "thinking_delta", "thinking": block["thinking"]},
                  {"type": "signature_delta", "signature": block["signature"]}]
    elif kind == "text":
        opening = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in reply.text_deltas]
    else:
        assert reply.call is not None
        opening = {**block, "input": {}}
        arguments = reply.call.arguments if index == _call_index(reply) else compact(block["input"]).decode()
        deltas = [{"type": "input_json_delta", "partial_json": arguments}]
    return [
        {"type": "content_block_start", "index": index, "content_block": opening},
        *({"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def stream_events(reply: Reply, ids: Ids) -> list[dict[str, Any]]:
    """The streamed answer's event payloads: ``message_start``, [the note], each block's events,
    ``message_delta`` (stop reason, output tokens), ``message_stop``."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": _message(reply, ids, [], None, 1)}]
    if reply.note:
        events.append({"type": "emulator_note", "note": "an event no client knows"})
    for index, block in enumerate(content_blocks(reply, ids)):
        events.extend(_block_events(block, index, reply))
    delta: dict[str, Any] = {"type": "message_delta",
                             "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None}}
    if reply.usage:
        delta["usage"] = {"output_tokens": reply.output_tokens}
    events.append(delta)
    events.append({"type": "message_stop"})
    return events


def error_body(error: ProviderError) -> dict[str, Any]:
    """The error body of a refused request: ``{"type":"error","error":{"type","message"}}``."""
    return {"type": "error", "error": {"type": _ERROR_TYPES[error.kind], "message": error.message}}


def failure_events(error: ProviderError, ids: Ids) -> list[dict[str, Any]]:
    """A stream the provider fails: ``message_start`` then an ``error`` event."""
    return [{"type": "message_start", "message": _message(Reply(), ids, [], None, 1)}, error_body(error)]
