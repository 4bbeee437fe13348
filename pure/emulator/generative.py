"""The emulator's ``google-generative`` rendering (docs/loop.md#generative-language): complete Generative Language
API ``GenerateContentResponse`` objects, so the real Gemini CLI accepts them. Written independently of any decoder."""

from __future__ import annotations

from typing import Any

import msgspec

from metaharness.pure.emulator.reply import Call, Ids, ProviderError, Reply

_ERROR_STATUSES = {
    "authentication": "UNAUTHENTICATED",
    "overloaded": "UNAVAILABLE",
    "invalid-request": "INVALID_ARGUMENT",
}
COUNTED_TOKENS = 42
"""What ``:countTokens`` answers (``totalTokens``)."""


def _args(call: Call) -> Any:
    """The call's arguments as the ``args`` object, or ``{"input": text}`` when they are not a JSON object."""
    try:
        value = msgspec.json.decode(call.arguments)
    except msgspec.DecodeError:
        return {"input": call.arguments}
    return value if isinstance(value, dict) else {"input": value}


def _call_parts(reply: Reply, ids: Ids) -> list[dict[str, Any]]:
    """The reply's calls (its call, then its parallel calls) as ``functionCall`` parts, numbered from R + 1."""
    calls = [*((reply.call,) if reply.call is not None else ()), *reply.parallel]
    return [{"functionCall": {"id": f"call_b10x_{ids.call + offset:03d}", "name": call.name, "args": _args(call)}}
            for offset, call in enumerate(calls)]


def _usage(reply: Reply) -> dict[str, Any] | None:
    if not reply.usage:
        return None
    out = reply.output_tokens
    return {"promptTokenCount": 42, "cachedContentTokenCount": 7, "candidatesTokenCount": out,
            "totalTokenCount": 42 + out}


def _chunk(ids: Ids, parts: list[dict[str, Any]], finish: str | None, use: dict[str, Any] | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": ids.model,
                             "responseId": ids.response_id("resp")}
    if use is not None:
        chunk["usageMetadata"] = use
    return chunk


def _finish(reply: Reply) -> str:
    return "MAX_TOKENS" if reply.incomplete else "STOP"


def response_body(reply: Reply, ids: Ids) -> dict[str, Any]:
    """The non-streaming answer: one response whose candidate holds the text and the calls."""
    parts = [*([{"text": reply.text}] if reply.text else []), *_call_parts(reply, ids)]
    return _chunk(ids, parts, _finish(reply), _usage(reply))


def stream_events(reply: Reply, ids: Ids) -> list[dict[str, Any]]:
    """The streamed answer: one chunk per text delta, then the calls' chunk, the last chunk carrying the
    finish reason and the usage."""
    pieces: list[list[dict[str, Any]]] = [[{"text": piece}] for piece in reply.text_deltas if piece]
    calls = _call_parts(reply, ids)
    if calls or not pieces:
        pieces.append(calls)
    last = len(pieces) - 1
    return [_chunk(ids, parts, _finish(reply) if index == last else None, _usage(reply) if index == last else None)
            for index, parts in enumerate(pieces)]


def error_body(error: ProviderError) -> dict[str, Any]:
    """The error body of a refused request: ``{"error":{"code","message","status"}}``."""
    return {"error": {"code": error.status, "message": error.message, "status": _ERROR_STATUSES[error.kind]}}


def failure_events(error: ProviderError, ids: Ids) -> list[dict[str, Any]]:
    """A stream the provider fails: one empty chunk, then the error object."""
    return [_chunk(ids, [], None, None), error_body(error)]
