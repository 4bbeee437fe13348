"""The ``openai-responses`` wire: ``POST {base}/responses`` (docs/loop.md#openai-responses).

``project_request`` turns a neutral turn into exact bytes; ``decode_stream`` turns SSE frames into
neutral stream events ending in one ``Outcome`` or ``WireError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import JSON_DEPTH_LIMIT, too_deep
from metaharness.pure.jsonline import compact
from metaharness.pure.wires.neutral import (
    AssistantText,
    Item,
    Opaque,
    Outcome,
    ProviderStop,
    StreamArguments,
    StreamEvent,
    StreamReasoning,
    StreamText,
    StreamWarning,
    ToolCall,
    ToolResult,
    TurnRequest,
    Usage,
    UserText,
    WireError,
    WireRequest,
)
from metaharness.pure.wires.projection import (
    body_bytes,
    cross_wire,
    decode_raw,
    parse_arguments,
    sampling_refused,
    unknown_event,
    unknown_item,
)
from metaharness.pure.wires.sse import SseBroken, SseFrame, SseItem

WIRE = "openai-responses"
ENDPOINT_PATH = "/responses"
INSTRUCTION_CAP = 256 * 1024
ACCEPTED_EVENTS: frozenset[str] = frozenset(
    {
        "error",
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.completed",
        "response.incomplete",
        "response.failed",
    }
)


def request_headers(session_key: str, credential: str | None) -> tuple[tuple[str, str], ...]:
    """The wire's headers in order; ``authorization`` only with a credential (docs/loop.md#openai-responses)."""
    fixed = (
        ("accept", "text/event-stream"),
        ("content-type", "application/json"),
        ("originator", "b10x-harness"),
        ("session-id", session_key),
        ("x-client-request-id", session_key),
    )
    return fixed + ((("authorization", f"Bearer {credential}"),) if credential is not None else ())


def project_request(request: TurnRequest, session_key: str) -> Result[WireRequest, WireError]:
    """The exact request body, or the pre-flight or cross-wire refusal (docs/loop.md#openai-responses)."""
    sampling = request.sampling
    refused = sampling_refused(sampling, WIRE, 2)
    if refused is not None:
        return Failure(refused)
    if sampling.effort is not None and not sampling.effort:
        return Failure(WireError("refused", "the reasoning effort is empty"))
    if len(request.instruction.encode()) > INSTRUCTION_CAP:
        return Failure(WireError("refused", f"the instruction is over the {INSTRUCTION_CAP} byte bound on {WIRE}"))
    inputs: list[Any] = [_message("developer", "input_text", request.instruction)]
    for position, item in enumerate(request.items, start=1):
        if isinstance(item, Opaque) and item.wire != WIRE:
            return Failure(cross_wire(position, item, WIRE))
        inputs.append(_input_item(item))
    body: dict[str, Any] = {
        "include": ["reasoning.encrypted_content"],
        "input": inputs,
        "model": request.model,
        "prompt_cache_key": session_key,
        "store": False,
        "stream": True,
        "tools": [
            {"type": "function", "name": t.name, "description": t.description, "parameters": t.schema, "strict": False}
            for t in request.tools
        ],
    }
    if sampling.max_output_tokens is not None:
        body["max_output_tokens"] = sampling.max_output_tokens
    if sampling.effort is not None:
        body["reasoning"] = {"effort": sampling.effort}
    if sampling.temperature is not None:
        body["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        body["top_p"] = sampling.top_p
    return Success(WireRequest(ENDPOINT_PATH, body_bytes(body)))


def _message(role: str, part: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _input_item(item: Item) -> Any:
    if isinstance(item, UserText):
        return _message("user", "input_text", item.text)
    if isinstance(item, AssistantText):
        return _message("assistant", "output_text", item.text)
    if isinstance(item, ToolCall):
        return {
            "type": "function_call",
            "call_id": item.call_id,
            "name": item.name,
            "arguments": compact(item.arguments).decode(),
        }
    if isinstance(item, ToolResult):
        output = compact({"ok": False, "error": item.output}).decode() if item.failed else item.output
        return {"type": "function_call_output", "call_id": item.call_id, "output": output}
    return item.payload


class _Event(msgspec.Struct):
    """The fields of a Responses event the decoder reads; nested objects stay raw until needed."""

    type: Any = None
    delta: Any = None
    item_id: Any = None
    item: msgspec.Raw = msgspec.Raw(b"")
    response: msgspec.Raw = msgspec.Raw(b"")
    message: Any = None
    error: Any = None


_EVENT = msgspec.json.Decoder(_Event)


def decode_stream(frames: Iterable[SseItem], request_model: str) -> Iterator[StreamEvent]:
    """Neutral events of one Responses stream; the last one is an ``Outcome`` or a ``WireError``.

    The first ``response.completed``/``response.incomplete`` decides, so decoding ends there: nothing after
    it can change the turn, and a peer that neither sends ``[DONE]`` nor ends the body is not waited for.
    """
    call_ids: dict[str, str] = {}
    done_items: list[Any] = []
    for frame in frames:
        if type(frame) is not SseFrame:
            if isinstance(frame, SseBroken):
                yield WireError("protocol", f"{WIRE}: {frame.message}")
                return
            break
        if frame.data == b"[DONE]":
            break
        if too_deep(frame.data):  # its message, error, item or response would raise in the decoder or later
            yield WireError("protocol", f"{WIRE} sent an event nested deeper than {JSON_DEPTH_LIMIT} arrays and objects")
            return
        try:
            event = _EVENT.decode(frame.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            yield WireError("protocol", f"{WIRE} sent an event that is not a JSON object")
            return
        event_type = event.type
        if event_type == "response.output_text.delta":
            yield StreamText(_text(event.delta))
        elif event_type == "response.function_call_arguments.delta":
            item_id = _text(event.item_id)
            yield StreamArguments(call_ids.get(item_id, item_id), _text(event.delta))
        elif event_type == "response.reasoning_summary_text.delta":
            yield StreamReasoning(_text(event.delta))
        elif event_type == "response.output_item.added":
            item = decode_raw(event.item)
            if isinstance(item, dict) and item.get("type") == "function_call":
                call_ids[_text(item.get("id"))] = _text(item.get("call_id"))
        elif event_type == "response.output_item.done":
            item = decode_raw(event.item)
            if isinstance(item, dict):
                done_items.append(item)
        elif event_type in ("response.completed", "response.incomplete"):
            response = decode_raw(event.response)
            yield from _outcome(response if isinstance(response, dict) else {}, done_items, request_model)
            return
        elif event_type == "response.failed":
            yield WireError("refused", _failure_message(decode_raw(event.response)))
            return
        elif event_type == "error":
            yield WireError("refused", _error_message(event.message, event.error))
            return
        elif event_type not in ACCEPTED_EVENTS:
            yield StreamWarning("unknown-stream-event", unknown_event(WIRE, str(event_type)))
    yield WireError("truncated", f"{WIRE} ended the stream before the response completed")


def _outcome(response: dict[str, Any], done_items: list[Any], request_model: str) -> Iterator[StreamEvent]:
    output = response.get("output")
    items_in = output if isinstance(output, list) and output else done_items
    items: list[Item] = []
    calls = 0
    for raw in items_in:
        if not isinstance(raw, dict):
            continue
        kind = raw.get("type")
        if kind == "message":
            text = "".join(
                _text(part.get("text"))
                for part in raw.get("content") or []
                if isinstance(part, dict) and part.get("type") == "output_text"
            )
            items.append(AssistantText(text))
        elif kind == "function_call":
            ok, arguments = parse_arguments(_text(raw.get("arguments")))
            if not ok:
                yield WireError("protocol", f"{WIRE}: the arguments of call `{_text(raw.get('call_id'))}` are not JSON")
                return
            items.append(ToolCall(_text(raw.get("call_id")), _text(raw.get("name")), arguments))
            calls += 1
        elif kind == "reasoning":
            items.append(Opaque(WIRE, raw))
        else:
            items.append(Opaque(WIRE, raw))
            yield StreamWarning("unknown-output-item", unknown_item(WIRE, str(kind)))
    model = response.get("model")
    yield Outcome(tuple(items), _stop(response, calls), _usage(response.get("usage")), model if isinstance(model, str) and model else request_model)


def _stop(response: dict[str, Any], calls: int) -> ProviderStop:
    if response.get("status") == "incomplete":
        details = response.get("incomplete_details")
        reason = _text(details.get("reason")) if isinstance(details, dict) else ""
        if reason == "max_output_tokens":
            return ProviderStop("max-output-tokens")
        return ProviderStop("incomplete", reason or "incomplete")
    return ProviderStop("tool-calls") if calls else ProviderStop("end-turn")


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    details = raw.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(_count(raw.get("input_tokens")), _count(raw.get("output_tokens")), _count(cached))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _failure_message(response: Any) -> str:
    error = response.get("error") if isinstance(response, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return f"{WIRE} failed the response: {message if isinstance(message, str) else 'no message'}"


def _error_message(message: Any, error: Any) -> str:
    if not isinstance(message, str):
        message = error.get("message") if isinstance(error, dict) else None
    return f"{WIRE} sent an error: {message if isinstance(message, str) else 'no message'}"
