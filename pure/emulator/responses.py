"""The emulator's ``openai-responses`` rendering (docs/loop.md#answer-function): complete Responses API objects, so
real clients (the b10x loop, Codex) accept them. Written independently of the loop's decoder."""

from __future__ import annotations

from typing import Any

from metaharness.pure.emulator.reply import Call, Ids, ProviderError, Reasoning, Reply

CREATED_AT = 1764460800
"""A fixed ``created_at``: the emulator reads no clock (docs/loop.md#answer-function)."""

_ERROR_TYPES = {
    "authentication": ("invalid_request_error", "invalid_api_key"),
    "overloaded": ("server_error", "server_is_overloaded"),
    "invalid-request": ("invalid_request_error", "invalid_request"),
}


def usage(reply: Reply) -> dict[str, Any] | None:
    """The fixed usage (docs/loop.md#answer-function), or ``None`` when the scenario reports none."""
    if not reply.usage:
        return None
    out = reply.output_tokens
    return {
        "input_tokens": 42,
        "input_tokens_details": {"cached_tokens": 7},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 42 + out,
    }


def _response(ids: Ids, status: str, output: list[dict[str, Any]], use: dict[str, Any] | None,
              error: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": ids.response_id("resp"),
        "object": "response",
        "created_at": CREATED_AT,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": ids.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": use,
        "user": None,
        "metadata": {},
    }


def _reasoning_item(reasoning: Reasoning, ids: Ids) -> dict[str, Any]:
    return {
        "id": ids.call_id("rs"),
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": reasoning.summary}],
        "encrypted_content": reasoning.blob,
    }


def _message_item(reply: Reply, ids: Ids) -> dict[str, Any]:
    return {
        "id": ids.response_id("msg"),
        "type": "message",
        "status": "incomplete" if reply.incomplete else "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}],
    }


def _call_item(call: Call, ids: Ids) -> dict[str, Any]:
    if call.custom:
        return {"id": ids.call_id("fc"), "type": "custom_tool_call", "status": "completed",
                "call_id": ids.call_id("call"), "name": call.name, "input": call.arguments}
    item = {"id": ids.call_id("fc"), "type": "function_call", "status": "completed",
            "arguments": call.arguments, "call_id": ids.call_id("call"), "name": call.name}
    return item if call.namespace is None else {**item, "namespace": call.namespace}


def output_items(reply: Reply, ids: Ids) -> list[dict[str, Any]]:
    """The response's ``output``: reasoning, message, call, in that order, each when present."""
    items = []
    if reply.reasoning is not None:
        items.append(_reasoning_item(reply.reasoning, ids))
    if reply.text:
        items.append(_message_item(reply, ids))
    if reply.call is not None:
        items.append(_call_item(reply.call, ids))
    return items


def _terminal_status(reply: Reply) -> str:
    return "incomplete" if reply.incomplete else "completed"


def response_body(reply: Reply, ids: Ids) -> dict[str, Any]:
    """The non-streaming answer: one Response object."""
    return _response(ids, _terminal_status(reply), output_items(reply, ids), usage(reply))


def _item_events(item: dict[str, Any], index: int, reply: Reply) -> list[dict[str, Any]]:
    """``output_item.added``, the item's own part and delta events, ``output_item.done``."""
    at = {"item_id": item["id"], "output_index": index}
    kind = item["type"]
    if kind == "reasoning":
        text = item["summary"][0]["text"]
        opening = {**item, "summary": [], "encrypted_content": None}
        part = {**at, "summary_index": 0}
        inner = [
            {"type": "response.reasoning_summary_part.added", **part, "part": {"type": "summary_text", "text": ""}},
            {"type": "response.reasoning_summary_text.delta", **part, "delta": text},
            {"type": "response.reasoning_summary_text.done", **part, "text": text},
            {"type": "response.reasoning_summary_part.done", **part, "part": {"type": "summary_text", "text": text}},
        ]
    elif kind == "message":
        opening = {**item, "status": "in_progress", "content": []}
        part = {**at, "content_index": 0}
        blank = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        inner = [
            {"type": "response.content_part.added", **part, "part": blank},
            *({"type": "response.output_text.delta", **part, "delta": d, "logprobs": []} for d in reply.text_deltas),
            {"type": "response.output_text.done", **part, "text": reply.text, "logprobs": []},
            {"type": "response.content_part.done", **part, "part": item["content"][0]},
        ]
    elif kind == "custom_tool_call":
        opening = {**item, "status": "in_progress", "input": ""}
        inner = [
            {"type": "response.custom_tool_call_input.delta", **at, "delta": item["input"]},
            {"type": "response.custom_tool_call_input.done", **at, "input": item["input"]},
        ]
    else:
        opening = {**item, "status": "in_progress", "arguments": ""}
        inner = [
            {"type": "response.function_call_arguments.delta", **at, "delta": item["arguments"]},
            {"type": "response.function_call_arguments.done", **at, "name": item["name"],
             "arguments": item["arguments"]},
        ]
    return [
        {"type": "response.output_item.added", "output_index": index, "item": opening},
        *inner,
        {"type": "response.output_item.done", "output_index": index, "item": item},
    ]


def _numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each event with its ``sequence_number`` right after ``type``."""
    return [{"type": e["type"], "sequence_number": i, **{k: v for k, v in e.items() if k != "type"}}
            for i, e in enumerate(events)]


def stream_events(reply: Reply, ids: Ids) -> list[dict[str, Any]]:
    """The streamed answer's event payloads, in order: ``response.created``, [the note], each item's
    events, then ``response.completed`` or ``response.incomplete`` with the full output and usage."""
    items = output_items(reply, ids)
    events = [{"type": "response.created", "response": _response(ids, "in_progress", [], None)}]
    if reply.note:
        events.append({"type": "response.emulator_note", "note": "an event no client knows"})
    for index, item in enumerate(items):
        events.extend(_item_events(item, index, reply))
    status = _terminal_status(reply)
    events.append({"type": f"response.{status}", "response": _response(ids, status, items, usage(reply))})
    return _numbered(events)


def failure_events(error: ProviderError, ids: Ids) -> list[dict[str, Any]]:
    """A stream the provider fails: ``response.created`` then ``response.failed``."""
    detail = {"code": _ERROR_TYPES[error.kind][0], "message": error.message}
    return _numbered([
        {"type": "response.created", "response": _response(ids, "in_progress", [], None)},
        {"type": "response.failed", "response": _response(ids, "failed", [], None, detail)},
    ])


def error_body(error: ProviderError) -> dict[str, Any]:
    """The error body of a refused request: ``{"error":{"type","code","message"}}``."""
    kind, code = _ERROR_TYPES[error.kind]
    return {"error": {"type": kind, "code": code, "message": error.message}}

