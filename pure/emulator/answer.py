"""The emulator's answer function (docs/loop.md#process-and-routes, #answer-function): routes, body admission and the
scenario's reply rendered on the request's wire — a pure function of (scenario, method, path, headers, body, N)."""

from __future__ import annotations

import zlib
from typing import Any

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.budgets import SLOW_FRAME_DELAY_MS
from metaharness.pure.emulator import generative, messages, responses
from metaharness.pure.emulator.reply import Ids, ProviderError, Reply
from metaharness.pure.emulator.request import (
    GENERATIVE_WIRE,
    MESSAGES_WIRE,
    RequestView,
    path_model,
    read_request,
    wire_of,
)
from metaharness.pure.emulator.scenarios import decide
from metaharness.pure.emulator.sse import DONE_FRAME, data_frame, sse_frame
from metaharness.pure.jsonline import compact

MAX_BODY = 4 * 1024 * 1024
DEFAULT_MODEL = "b10x-emulated"

Headers = tuple[tuple[str, str], ...]
STREAMED = ":streamGenerateContent"
"""The Generative Language method that streams (the path, not the body, says so on that wire)."""


class HttpAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """What to send: status, headers in order, body chunks (a stream's frames, one chunk each),
    a pause before each chunk, and the record's ``answer`` label. ``close`` ends the connection
    after the body (every stream is close-delimited)."""

    status: int
    headers: Headers
    chunks: tuple[bytes, ...]
    label: str
    close: bool = False
    delay_ms: int = 0


class Admitted(msgspec.Struct, frozen=True):
    """An admitted request body: its decoded bytes, its JSON value, and its facts."""

    body: bytes
    value: Any
    view: RequestView


class Exchange(msgspec.Struct, frozen=True):
    """One answered request: the answer, the admitted body (when one was), the scenario's side flag."""

    answer: HttpAnswer
    admitted: Admitted | None = None
    side: bool | None = None


def header(headers: Headers, name: str) -> str | None:
    """The first value of header ``name`` (case-insensitive), if any."""
    return next((value for key, value in headers if key.lower() == name), None)


def _json_answer(status: int, value: Any, extra: Headers = ()) -> HttpAnswer:
    body = compact(value)
    return HttpAnswer(
        status=status,
        headers=(("content-type", "application/json"), ("content-length", str(len(body))), *extra),
        chunks=(body,),
        label="status:200" if status == 200 else f"status:{status}",
    )


def _plain_error(path: str, status: int, message: str) -> HttpAnswer:
    error = ProviderError(status=status, kind="invalid-request", message=message)
    wire = wire_of(path)
    body = (messages.error_body(error) if "/messages" in path else
            generative.error_body(error) if wire == GENERATIVE_WIRE else responses.error_body(error))
    return _json_answer(status, body)


def _decoded(headers: Headers, raw: bytes) -> Result[bytes, tuple[int, str]]:
    encoding = (header(headers, "content-encoding") or "identity").strip().lower()
    if encoding == "identity":
        return Success(raw)
    if encoding != "gzip":
        return Failure((415, f"content-encoding `{encoding}` is not accepted; send identity or gzip"))
    inflater = zlib.decompressobj(wbits=31)
    try:
        body = inflater.decompress(raw, MAX_BODY + 1)
    except zlib.error:
        return Failure((400, "the gzip body does not decode"))
    if len(body) > MAX_BODY:
        return Failure((413, f"the body is over {MAX_BODY} bytes"))
    return Success(body)


def admit(path: str, headers: Headers, raw: bytes) -> Result[Admitted, tuple[int, str]]:
    """docs/loop.md#process-and-routes: over 4 MiB ⇒ 413; gzip decoded, other encodings ⇒ 415; not a JSON object
    (or one nested past ``JSON_DEPTH_LIMIT``) ⇒ 400."""
    if len(raw) > MAX_BODY:
        return Failure((413, f"the body is over {MAX_BODY} bytes"))

    def parsed(body: bytes) -> Result[Admitted, tuple[int, str]]:
        try:
            value = decode_bounded(body)
        except msgspec.DecodeError:
            return Failure((400, "the body is not JSON"))
        if not isinstance(value, dict):
            return Failure((400, "the body is not a JSON object"))
        view = read_request(wire_of(path), value)
        model = path_model(path)
        view = view if model is None else msgspec.structs.replace(view, model=model, stream=path.endswith(STREAMED))
        return Success(Admitted(body=body, value=value, view=view))

    return _decoded(headers, raw).bind(parsed)


def _frames(events: list[dict[str, Any]], wire: str) -> list[bytes]:
    if wire == GENERATIVE_WIRE:
        return [data_frame(event) for event in events]
    frames = [sse_frame(event) for event in events]
    return frames if wire == MESSAGES_WIRE else [*frames, DONE_FRAME]


def _bent(frames: list[bytes], events: list[dict[str, Any]], reply: Reply) -> list[bytes]:
    """docs/loop.md#loop-scenarios stream effects: ``malformed`` sends the first event then a non-JSON payload;
    ``truncated`` sends the stream up to its first delta, then half of the next frame, then closes."""
    if reply.effect == "malformed":
        return [frames[0], b"data: {not json\n\n"]
    if reply.effect == "truncated":
        first_delta = next(i for i, e in enumerate(events) if str(e["type"]).endswith("delta"))
        cut = frames[first_delta + 1]
        return [*frames[: first_delta + 1], cut[: len(cut) // 2]]
    return frames


def _stream(status: int, chunks: list[bytes], label: str, delay_ms: int = 0) -> HttpAnswer:
    return HttpAnswer(
        status=status,
        headers=(("content-type", "text/event-stream"), ("cache-control", "no-cache"), ("connection", "close")),
        chunks=tuple(chunks),
        label=label,
        close=True,
        delay_ms=delay_ms,
    )


def _label(reply: Reply, streamed: bool) -> str:
    if streamed and reply.effect != "none":
        return f"stream:{reply.effect}"
    if streamed and reply.incomplete:
        return "stream:incomplete"
    return f"call:{reply.call.name}" if reply.call is not None else "text"


def render(outcome: Reply | ProviderError, view: RequestView, n: int, call_number: int | None = None) -> HttpAnswer:
    """The scenario's outcome on the request's wire, streamed when the request asks for a stream; its
    call is numbered R + 1 unless the scenario numbers it (``call_number``)."""
    wire = messages if view.wire == MESSAGES_WIRE else generative if view.wire == GENERATIVE_WIRE else responses
    call = call_number if call_number is not None else view.tool_results + 1
    ids = Ids(n=n, call=call, model=view.model or DEFAULT_MODEL)
    streamed = view.stream is True
    if isinstance(outcome, ProviderError):
        if outcome.streamed and streamed:
            return _stream(200, _frames(wire.failure_events(outcome, ids), str(view.wire)), "stream:failed")
        extra: Headers = (("retry-after", outcome.retry_after),) if outcome.retry_after is not None else ()
        return _json_answer(outcome.status, wire.error_body(outcome), extra)
    delay = SLOW_FRAME_DELAY_MS if outcome.effect == "slow" else 0
    if not streamed:
        body = (messages.message_body(outcome, ids) if wire is messages else
                generative.response_body(outcome, ids) if wire is generative else responses.response_body(outcome, ids))
        plain = _json_answer(200, body)
        return msgspec.structs.replace(plain, label=_label(outcome, False), delay_ms=delay)
    events = wire.stream_events(outcome, ids)
    frames = _frames(events, str(view.wire))
    frames = frames if view.wire == GENERATIVE_WIRE else _bent(frames, events, outcome)
    return _stream(200, frames, _label(outcome, True), delay)


def _counted(path: str) -> Any:
    return {"totalTokens": generative.COUNTED_TOKENS} if wire_of(path) == GENERATIVE_WIRE else {"input_tokens": 42}


def answer_request(scenario: str, method: str, path: str, headers: Headers, raw: bytes, n: int) -> Exchange:
    """docs/loop.md#process-and-routes routes: ``POST …/v1/responses``, ``…/v1/messages`` and
    ``/v1beta/models/{model}:streamGenerateContent`` or ``:generateContent`` answer by scenario;
    ``POST /v1/messages/count_tokens`` ⇒ ``{"input_tokens":42}`` and ``…:countTokens`` ⇒
    ``{"totalTokens":42}``; ``GET /v1/models`` ⇒ an empty list; anything else 404. ``path`` carries no
    query string."""
    if method == "GET" and path == "/v1/models":
        return Exchange(_json_answer(200, {"object": "list", "data": []}))
    generated = wire_of(path) == GENERATIVE_WIRE and not path.endswith(":countTokens")
    answered = method == "POST" and (path in ("/v1/responses", "/v1/messages") or generated)
    counted = method == "POST" and (path == "/v1/messages/count_tokens" or path.endswith(":countTokens"))
    if not (answered or counted):
        return Exchange(_plain_error(path, 404, f"no route for {method} {path}"))
    admitted = admit(path, headers, raw)
    if isinstance(admitted, Failure):
        status, message = admitted.failure()
        return Exchange(_plain_error(path, status, message))
    body = admitted.unwrap()
    if not answered:
        return Exchange(_json_answer(200, _counted(path)), body)
    decision = decide(scenario, body.view, n)
    return Exchange(render(decision.outcome, body.view, n, decision.call_number), body, decision.side)
