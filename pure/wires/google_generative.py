"""The ``google-generative`` wire: ``POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`` with the key
in ``x-goog-api-key`` (docs/loop.md#generative-language; the wire Gemini CLI speaks).

``project_request`` turns a neutral turn into exact bytes; ``decode_stream`` turns the ``data:`` frames into neutral
stream events ending in one ``Outcome`` or ``WireError``. Every chunk is a ``GenerateContentResponse``: the
first candidate's parts carry text, thoughts and ``functionCall``s, the last chunk the ``finishReason`` and
``usageMetadata``. A call without an ``id`` is numbered ``<name>#<n>`` in the order the stream made it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.wires.neutral import (
    AssistantText,
    Item,
    Opaque,
    Outcome,
    ProviderStop,
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
from metaharness.pure.wires.projection import body_bytes, cross_wire, decode_payload, sampling_refused
from metaharness.pure.wires.sse import SseBroken, SseFrame, SseItem

WIRE = "google-generative"
STREAM_METHOD = ":streamGenerateContent"
STOP_WORDS = frozenset({"STOP", "FINISH_REASON_UNSPECIFIED"})
"""The finish reasons of a turn that ended on its own."""
REFUSED_WORDS = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "MALFORMED_FUNCTION_CALL"})


def endpoint_path(model: str) -> str:
    """The streamed method's path for ``model`` (the query ``alt=sse`` is the transport's)."""
    return f"/v1beta/models/{model}{STREAM_METHOD}"


def request_headers(credential: str | None) -> tuple[tuple[str, str], ...]:
    """The wire's headers in order; ``x-goog-api-key`` only with a credential."""
    fixed = (("accept", "text/event-stream"), ("content-type", "application/json"))
    return fixed + ((("x-goog-api-key", credential),) if credential is not None else ())


def _content(role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": role, "parts": parts}


def _contents(items: tuple[Item, ...]) -> Result[list[dict[str, Any]], WireError]:
    """The items as ``contents``: user text and tool results under ``user``, text and calls under ``model``;
    a result names its call's function, as the wire requires."""
    names = {item.call_id: item.name for item in items if isinstance(item, ToolCall)}
    contents: list[dict[str, Any]] = []
    for position, item in enumerate(items, start=1):
        if isinstance(item, UserText):
            contents.append(_content("user", [{"text": item.text}]))
        elif isinstance(item, AssistantText):
            contents.append(_content("model", [{"text": item.text}]))
        elif isinstance(item, ToolCall):
            contents.append(_content("model", [{"functionCall": {"id": item.call_id, "name": item.name,
                                                                 "args": item.arguments}}]))  # fmt: skip
        elif isinstance(item, ToolResult):
            response = {"error": item.output} if item.failed else {"output": item.output}
            call = {"id": item.call_id, "name": names.get(item.call_id, item.call_id), "response": response}
            contents.append(_content("user", [{"functionResponse": call}]))
        elif item.wire != WIRE:
            return Failure(cross_wire(position, item, WIRE))
        else:
            contents.append(_content("model", [item.payload]))
    return Success(contents)


def project_request(request: TurnRequest) -> Result[WireRequest, WireError]:
    """The exact request body, or the pre-flight or cross-wire refusal."""
    sampling = request.sampling
    refused = sampling_refused(sampling, WIRE, 2)
    if refused is not None:
        return Failure(refused)
    if sampling.effort is not None:
        return Failure(WireError("refused", f"{WIRE} takes no reasoning effort"))

    def body(contents: list[dict[str, Any]]) -> WireRequest:
        config: dict[str, Any] = {}
        if sampling.max_output_tokens is not None:
            config["maxOutputTokens"] = sampling.max_output_tokens
        if sampling.temperature is not None:
            config["temperature"] = sampling.temperature
        if sampling.top_p is not None:
            config["topP"] = sampling.top_p
        value: dict[str, Any] = {
            "contents": contents,
            "systemInstruction": {"parts": [{"text": request.instruction}]},
            "tools": [{"functionDeclarations": [
                {"name": t.name, "description": t.description, "parametersJsonSchema": t.schema}
                for t in request.tools]}] if request.tools else [],
        }  # fmt: skip
        if config:
            value["generationConfig"] = config
        return WireRequest(endpoint_path(request.model), body_bytes(value))

    return _contents(request.items).map(body)


class _Turn(msgspec.Struct):
    """What the decoder gathers across chunks."""

    items: list[Item] = msgspec.field(default_factory=list)
    text: str = ""
    finish: str | None = None
    usage: Usage | None = None
    model: str | None = None
    calls: int = 0


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return Usage(_count(raw.get("promptTokenCount")), _count(raw.get("candidatesTokenCount")),
                 _count(raw.get("cachedContentTokenCount")))  # fmt: skip


def _parts(chunk: dict[str, Any], turn: _Turn) -> Iterator[StreamEvent]:
    """One chunk's first candidate folded into the turn; its text and thought deltas yielded."""
    candidates = chunk.get("candidates")
    candidate = candidates[0] if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict) else {}
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict):
            continue
        call = part.get("functionCall")
        if isinstance(part.get("text"), str) and part.get("thought") is True:
            yield StreamReasoning(part["text"])
        elif isinstance(part.get("text"), str):
            turn.text += part["text"]
            yield StreamText(part["text"])
        elif isinstance(call, dict) and isinstance(call.get("name"), str):
            turn.calls += 1
            stated = call.get("id")
            call_id = stated if isinstance(stated, str) and stated else f"{call['name']}#{turn.calls}"
            _close_text(turn)
            turn.items.append(ToolCall(call_id, call["name"], call.get("args") if "args" in call else {}))
        else:
            _close_text(turn)
            turn.items.append(Opaque(WIRE, part))
    if isinstance(candidate.get("finishReason"), str):
        turn.finish = candidate["finishReason"]
    turn.usage = _usage(chunk.get("usageMetadata")) or turn.usage
    turn.model = chunk["modelVersion"] if isinstance(chunk.get("modelVersion"), str) else turn.model


def _close_text(turn: _Turn) -> None:
    if turn.text:
        turn.items.append(AssistantText(turn.text))
        turn.text = ""


def _error_message(error: Any) -> str:
    message = error.get("message") if isinstance(error, dict) else None
    return f"{WIRE} sent an error: {message if isinstance(message, str) else 'no message'}"


def decode_stream(frames: Iterable[SseItem], request_model: str) -> Iterator[StreamEvent]:
    """Neutral events of one ``streamGenerateContent`` stream; the last one is an ``Outcome`` or a ``WireError``.

    The stream has no terminal event: the first chunk with a ``finishReason`` decides, and a stream that ends
    without one is truncated.
    """
    turn = _Turn()
    for frame in frames:
        if type(frame) is not SseFrame:
            if isinstance(frame, SseBroken):
                yield WireError("protocol", f"{WIRE}: {frame.message}")
                return
            break
        chunk = decode_payload(frame.data)
        if chunk is None:
            yield WireError("protocol", f"{WIRE} sent a chunk that is not a JSON object")
            return
        if "error" in chunk:
            yield WireError("refused", _error_message(chunk["error"]))
            return
        if "candidates" not in chunk and "usageMetadata" not in chunk:
            yield StreamWarning("unknown-stream-event", f"{WIRE} sent a chunk with neither candidates nor usage")
            continue
        yield from _parts(chunk, turn)
        if turn.finish is not None:
            yield _outcome(turn, request_model)
            return
    yield WireError("truncated", f"{WIRE} ended the stream before a finish reason")


def _outcome(turn: _Turn, request_model: str) -> Outcome | WireError:
    _close_text(turn)
    finish = turn.finish or ""
    if finish in REFUSED_WORDS:
        return WireError("refused", f"{WIRE} stopped the turn: {finish}")
    if finish == "MAX_TOKENS":
        stop = ProviderStop("max-output-tokens")
    elif finish in STOP_WORDS:
        stop = ProviderStop("tool-calls") if turn.calls else ProviderStop("end-turn")
    else:
        stop = ProviderStop("incomplete", finish)
    return Outcome(tuple(turn.items), stop, turn.usage, turn.model or request_model)


def calls_of(outcome: Outcome) -> tuple[ToolCall, ...]:
    """The calls a decoded turn made, in order (what a route witness reconciles with the stream)."""
    return tuple(item for item in outcome.items if isinstance(item, ToolCall))

