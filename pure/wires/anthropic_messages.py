"""The ``anthropic-messages`` wire: ``POST {base}/messages`` (docs/loop.md#anthropic-messages).

``project_request`` turns a neutral turn into exact bytes; ``decode_stream`` turns SSE frames into
neutral stream events ending in one ``Outcome`` or ``WireError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal

from returns.result import Failure, Result, Success

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
    decode_payload,
    parse_arguments,
    sampling_refused,
    unknown_event,
    unknown_item,
)
from metaharness.pure.wires.sse import SseBroken, SseEnd, SseFrame, SseItem

WIRE = "anthropic-messages"
ENDPOINT_PATH = "/messages"
DEFAULT_MAX_TOKENS = 8192
OAUTH_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
ACCEPTED_EVENTS: frozenset[str] = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    }
)
_EPHEMERAL = {"type": "ephemeral"}

CredentialKind = Literal["api-key", "oauth"]


def request_headers(credential_kind: CredentialKind | None, credential: str | None) -> tuple[tuple[str, str], ...]:
    """The wire's headers in order: API key ⇒ ``x-api-key``; OAuth ⇒ bearer plus the OAuth beta
    (docs/loop.md#anthropic-messages)."""
    fixed = (
        ("accept", "text/event-stream"),
        ("content-type", "application/json"),
        ("anthropic-version", "2023-06-01"),
    )
    if credential is None or credential_kind is None:
        return fixed
    if credential_kind == "api-key":
        return fixed + (("x-api-key", credential),)
    return fixed + (("authorization", f"Bearer {credential}"), ("anthropic-beta", "oauth-2025-04-20"))


def project_request(request: TurnRequest, credential_kind: CredentialKind | None) -> Result[WireRequest, WireError]:
    """The exact request body, or the pre-flight or cross-wire refusal (docs/loop.md#anthropic-messages)."""
    sampling = request.sampling
    refused = sampling_refused(sampling, WIRE, 1)
    if refused is not None:
        return Failure(refused)
    messages: list[dict[str, Any]] = []
    for position, item in enumerate(request.items, start=1):
        if isinstance(item, Opaque) and item.wire != WIRE:
            return Failure(cross_wire(position, item, WIRE))
        role, block = _block(item)
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].append(block)
        else:
            messages.append({"role": role, "content": [block]})
    if messages:
        _mark_last_cacheable(messages[-1]["content"])
    system: list[dict[str, Any]] = [{"type": "text", "text": OAUTH_IDENTITY}] if credential_kind == "oauth" else []
    system.append({"type": "text", "text": request.instruction, "cache_control": _EPHEMERAL})
    body: dict[str, Any] = {
        "max_tokens": sampling.max_output_tokens if sampling.max_output_tokens is not None else DEFAULT_MAX_TOKENS,
        "messages": messages,
        "model": request.model,
        "stream": True,
        "system": system,
        "tools": [{"name": t.name, "description": t.description, "input_schema": t.schema} for t in request.tools],
    }
    if sampling.effort is not None:
        body["output_config"] = {"effort": sampling.effort}
    if sampling.temperature is not None:
        body["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        body["top_p"] = sampling.top_p
    return Success(WireRequest(ENDPOINT_PATH, body_bytes(body)))


def _block(item: Item) -> tuple[str, dict[str, Any]]:
    if isinstance(item, UserText):
        return "user", {"type": "text", "text": item.text}
    if isinstance(item, AssistantText):
        return "assistant", {"type": "text", "text": item.text}
    if isinstance(item, ToolCall):
        return "assistant", {"type": "tool_use", "id": item.call_id, "name": item.name, "input": item.arguments}
    if isinstance(item, ToolResult):
        return "user", {
            "type": "tool_result",
            "tool_use_id": item.call_id,
            "content": item.output,
            "is_error": item.failed,
        }
    payload = item.payload
    return "assistant", dict(payload) if isinstance(payload, dict) else {"type": "opaque", "value": payload}


def _mark_last_cacheable(blocks: list[dict[str, Any]]) -> None:
    for index in range(len(blocks) - 1, -1, -1):
        if blocks[index].get("type") in ("text", "tool_result"):
            blocks[index] = {**blocks[index], "cache_control": _EPHEMERAL}
            return


class _Block:
    """A content block being streamed (local to one decoding)."""

    __slots__ = ("kind", "parts", "raw", "signature")

    def __init__(self, kind: str, raw: dict[str, Any]) -> None:
        self.kind = kind
        self.raw = raw
        self.parts: list[str] = []
        self.signature = ""


def decode_stream(frames: Iterable[SseItem], request_model: str) -> Iterator[StreamEvent]:
    """Neutral events of one Messages stream; the last one is an ``Outcome`` or a ``WireError``."""
    blocks: dict[int, _Block] = {}
    items: list[Item] = []
    model = request_model
    usage_start: dict[str, Any] | None = None
    output_tokens: int | None = None
    stop_reason: Any = None
    stop_details: Any = None
    for frame in frames:
        if isinstance(frame, SseEnd):
            break
        payload = _payload(frame)
        if isinstance(payload, WireError):
            yield payload
            return
        event_type = payload.get("type")
        if event_type == "content_block_delta":
            streamed = _block_delta(blocks.get(_index(payload)), payload)
            if streamed is not None:
                yield streamed
        elif event_type == "content_block_start":
            raw = payload.get("content_block")
            raw = raw if isinstance(raw, dict) else {}
            blocks[_index(payload)] = _Block(_text(raw.get("type")), raw)
        elif event_type == "content_block_stop":
            block = blocks.pop(_index(payload), None)
            finished = (None, None) if block is None else _finish_block(block)
            if isinstance(finished, WireError):
                yield finished
                return
            item, warning = finished
            if warning is not None:
                yield warning
            if item is not None:
                items.append(item)
        elif event_type == "message_start":
            model, usage_start, output_tokens = _message_start(payload, model, usage_start, output_tokens)
        elif event_type == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict):
                stop_reason, stop_details = delta.get("stop_reason"), delta.get("stop_details")
            usage = payload.get("usage")
            counted = _optional_count(usage.get("output_tokens")) if isinstance(usage, dict) else None
            output_tokens = output_tokens if counted is None else counted
        elif event_type == "message_stop":
            calls = sum(1 for item in items if isinstance(item, ToolCall))
            stop, warning = _stop(stop_reason, stop_details, calls)
            if warning is not None:
                yield warning
            yield Outcome(tuple(items), stop, _usage(usage_start, output_tokens), model)
            return
        elif event_type == "error":
            yield _error(payload)
            return
        elif event_type not in ACCEPTED_EVENTS:
            yield StreamWarning("unknown-stream-event", unknown_event(WIRE, str(event_type)))
    yield WireError("truncated", f"{WIRE} ended the stream before `message_stop`")


def _message_start(
    payload: dict[str, Any], model: str, usage: dict[str, Any] | None, output_tokens: int | None
) -> tuple[str, dict[str, Any] | None, int | None]:
    """``message_start``: the model it names (else ``model``), and its usage with the output tokens counted so far."""
    message = payload.get("message")
    message = message if isinstance(message, dict) else {}
    if isinstance(message.get("model"), str) and message["model"]:
        model = message["model"]
    started = message.get("usage")
    if not isinstance(started, dict):
        return model, usage, output_tokens
    return model, started, _optional_count(started.get("output_tokens"))


def _payload(frame: SseFrame | SseBroken) -> dict[str, Any] | WireError:
    """One frame's JSON object, or the protocol error that ends the stream (a broken frame, ``[DONE]``, a
    payload that is not an object)."""
    if isinstance(frame, SseBroken):
        return WireError("protocol", f"{WIRE}: {frame.message}")
    if frame.data == b"[DONE]":
        return WireError("protocol", f"{WIRE} sent a `[DONE]` payload, which this wire never uses")
    payload = decode_payload(frame.data)
    return WireError("protocol", f"{WIRE} sent an event that is not a JSON object") if payload is None else payload


def _block_delta(block: _Block | None, payload: dict[str, Any]) -> StreamEvent | None:
    """One ``content_block_delta``: what it adds to its block (text, a tool call's arguments, reasoning, a
    signature) and the event that streams it (none for a signature)."""
    delta = payload.get("delta")
    delta = delta if isinstance(delta, dict) else {}
    delta_type = delta.get("type")
    if delta_type == "signature_delta":
        if block is not None:
            block.signature += _text(delta.get("signature"))
        return None
    field = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}.get(str(delta_type))
    if field is None:
        return StreamWarning("unknown-stream-event", unknown_event(WIRE, f"content_block_delta/{delta_type}"))
    text = _text(delta.get(field))
    if block is not None:
        block.parts.append(text)
    if delta_type == "text_delta":
        return StreamText(text)
    if delta_type == "thinking_delta":
        return StreamReasoning(text)
    return StreamArguments(_text(block.raw.get("id")) if block is not None else "", text)


def _finish_block(block: _Block) -> WireError | tuple[Item | None, StreamWarning | None]:
    """The item a finished block leaves; an empty text block leaves none, since the Messages API refuses
    an empty text block when the conversation is sent back (docs/loop.md#anthropic-messages, stateless continuation)."""
    if block.kind == "text":
        text = "".join(block.parts) or _text(block.raw.get("text"))
        return (AssistantText(text) if text else None), None
    if block.kind == "tool_use":
        text = "".join(block.parts)
        if text:
            ok, arguments = parse_arguments(text)
        else:
            initial = block.raw.get("input")
            ok, arguments = True, initial if isinstance(initial, dict) and initial else {}
        if not ok:
            return WireError("protocol", f"{WIRE}: the input of call `{_text(block.raw.get('id'))}` is not JSON")
        return ToolCall(_text(block.raw.get("id")), _text(block.raw.get("name")), arguments), None
    if block.kind == "thinking":
        signature = block.signature or _text(block.raw.get("signature"))
        if not signature:
            return None, None
        thinking = "".join(block.parts) or _text(block.raw.get("thinking"))
        return Opaque(WIRE, {"type": "thinking", "thinking": thinking, "signature": signature}), None
    if block.kind == "redacted_thinking":
        return Opaque(WIRE, block.raw), None
    return Opaque(WIRE, block.raw), StreamWarning("unknown-output-item", unknown_item(WIRE, block.kind))


def _stop(reason: Any, details: Any, calls: int) -> tuple[ProviderStop, StreamWarning | None]:
    if reason == "tool_use":
        return ProviderStop("tool-calls"), None
    if reason in ("end_turn", None):
        return (ProviderStop("tool-calls") if calls else ProviderStop("end-turn")), None
    if reason == "max_tokens":
        return ProviderStop("max-output-tokens"), None
    text = str(reason)
    warning = None
    if text == "refusal" and isinstance(details, dict):
        warning = StreamWarning(
            "provider-refusal",
            "Provider declined the response. "
            f"Category: {_text(details.get('category'))} Explanation: {_text(details.get('explanation'))}",
        )
    return ProviderStop("incomplete", text), warning


def _usage(start: dict[str, Any] | None, output_tokens: int | None) -> Usage | None:
    if start is None and output_tokens is None:
        return None
    start = start or {}
    cached = _optional_count(start.get("cache_read_input_tokens")) or 0
    creation = _optional_count(start.get("cache_creation_input_tokens"))
    fresh = _optional_count(start.get("input_tokens")) or 0
    return Usage(fresh + cached + (creation or 0), output_tokens or 0, cached, creation)


def _error(payload: dict[str, Any]) -> WireError:
    error = payload.get("error")
    error = error if isinstance(error, dict) else {}
    kind = _text(error.get("type"))
    message = f"{WIRE} sent an error ({kind or 'untyped'}): {_text(error.get('message')) or 'no message'}"
    if kind == "overloaded_error":
        return WireError("rate-limited", message)
    if kind == "api_error":
        return WireError("transport", message)
    return WireError("refused", message)


def _index(payload: dict[str, Any]) -> int:
    index = payload.get("index")
    return index if isinstance(index, int) else -1


def _optional_count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
