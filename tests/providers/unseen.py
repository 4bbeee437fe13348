"""A loopback model provider the loop has never seen, written from the real public APIs' shapes.

It shares no code with ``metaharness.pure.wires`` or ``metaharness.pure.emulator``: it answers
``POST /v1/responses`` (OpenAI Responses streaming) and ``POST /v1/messages`` (Anthropic Messages
streaming) the way the real services and the gateways in front of them do, validates each request the
way the real services do (a malformed conversation is a 400 with the vendor's error body), and varies
the bytes by a ``Style``: line endings, ``data:`` spacing, ``event:`` lines, keep-alive comments and
``ping`` events, multi-line ``data``, tiny TCP writes that split UTF-8 and JSON anywhere, chunked
transfer on a kept-alive connection or a close-delimited body, gzip, ``[DONE]`` or not, 429/500/529
before the answer, text before a call, empty deltas, empty text blocks, reasoning and thinking.

The model's behaviour is one of ``SCENARIOS``: a function of the tool results the request carries.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NOTE = "written by an unseen provider — ünïcödé ✓ 日本語\n"
FINAL = "Done: the note is in place ✓ — 日本語のテキスト 🎉"
REFUSED = "The write was refused, so I stopped."


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reasoning:
    summary: str


@dataclass(frozen=True)
class End:
    """How the answer ends when not normally: ``max-tokens``, ``refusal`` (Messages), ``failed``, ``error``."""

    kind: str


Part = Text | Call | Reasoning | End


@dataclass(frozen=True)
class Result:
    """One tool result as the request carries it."""

    call_id: str
    text: str
    is_error: bool


@dataclass(frozen=True)
class Style:
    """How the bytes of an answer look on the wire: variants of real services, gateways and faulty peers."""

    name: str
    line_end: str = "\n"
    data_space: bool = True
    event_lines: bool = True
    keep_alive: bool = False
    multiline_data: bool = False
    chunk: int = 0
    chunked: bool = True
    gzip: bool = False
    done_sentinel: bool = True
    first_statuses: tuple[tuple[int, str | None], ...] = ()
    preamble: bool = False
    empty_deltas: bool = False
    empty_text_block: bool = False
    reasoning: bool = False
    sse_ids: bool = False
    first_stream_breaks: str = ""
    swapped_ids: bool = False
    drops_idle_connections: bool = False
    holds_connection_open: bool = False
    mislabelled_gzip: bool = False
    ids_restart_each_response: bool = False
    pause_ms: int = 0


STYLES = (
    Style("plain"),
    Style("crlf-nospace-noevent", line_end="\r\n", data_space=False, event_lines=False, done_sentinel=False),
    Style("keepalive-multiline-preamble", keep_alive=True, multiline_data=True, preamble=True, empty_deltas=True),
    Style("tiny-writes-close-delimited", chunk=3, chunked=False, preamble=True, data_space=False),
    Style("gzip-chunked-reasoning", gzip=True, chunk=40, reasoning=True, preamble=True, first_statuses=((503, "1"),)),
    Style("empty-text-block", empty_text_block=True),
    Style("busy-first", first_statuses=((429, None), (529, "0"))),
    Style("ids-restart-each-response", ids_restart_each_response=True, line_end="\r"),
    Style("holds-the-connection-open", chunked=False, holds_connection_open=True, done_sentinel=False),
    Style("keep-alive-dropped-when-idle", drops_idle_connections=True, data_space=False),
    Style("server-error-retry-date-swapped-ids", first_statuses=((500, "http-date+1"),), swapped_ids=True),
    Style("cut-mid-stream", sse_ids=True, first_stream_breaks="cut", preamble=True),
    Style("overloaded-mid-stream", first_stream_breaks="overloaded", preamble=True, chunked=False),
)


def _first_line_of_read(results: list[Result]) -> str:
    for result in results:
        try:
            reply = json.loads(result.text)
        except ValueError:
            continue
        if isinstance(reply, dict) and isinstance(reply.get("text"), str) and reply["text"]:
            return reply["text"].splitlines()[0].split("\t", 1)[-1]
    return "nothing readable"


def scenario_write(results: list[Result]) -> list[Part]:
    """One write, then a last word that says whether it was refused."""
    if not results:
        return [Call("file_write", {"path": "note.md", "text": NOTE})]
    return [Text(REFUSED if results[-1].is_error else FINAL)]


def scenario_parallel(results: list[Result]) -> list[Part]:
    """Two writes in one response (parallel tool calls), then a last word."""
    if not results:
        return [
            Call("file_write", {"path": "a.md", "text": "first of two\n"}),
            Call("file_write", {"path": "b.md", "text": "second of two\n"}),
        ]
    return [Text(FINAL)]


def scenario_multi(results: list[Result]) -> list[Part]:
    """Read the README, write what it said into a note, then finish: three turns."""
    if not results:
        return [Call("file_read", {"path": "README.md"})]
    if len(results) == 1:
        return [Call("file_write", {"path": "note.md", "text": f"README says: {_first_line_of_read(results)}\n"})]
    return [Text(REFUSED if results[-1].is_error else FINAL)]


def scenario_ending(kind: str) -> Callable[[list[Result]], list[Part]]:
    """Some text, then the answer ends as ``kind`` says."""
    return lambda results: [Text("I was about to"), End(kind)]


SCENARIOS: dict[str, Callable[[list[Result]], list[Part]]] = {
    **{f"ends-{kind}": scenario_ending(kind) for kind in ("max-tokens", "refusal", "failed", "error")},
    "write": scenario_write,
    "parallel": scenario_parallel,
    "multi": scenario_multi,
}


class BadRequest(Exception):
    """A request the real service would answer with 400."""


@dataclass
class Seen:
    """What the provider saw of one POST."""

    path: str
    headers: dict[str, str]
    status: int
    results: list[Result] = field(default_factory=list)
    error: str | None = None


def _uid(prefix: str, seed: str, length: int) -> str:
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    digest = hashlib.sha256(seed.encode()).digest()
    return prefix + "".join(alphabet[b % len(alphabet)] for b in digest[:length])


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# --- OpenAI Responses -----------------------------------------------------------------------------


def responses_results(body: dict[str, Any]) -> list[Result]:
    """Validate ``input`` as the Responses API does; the tool results it carries."""
    items = body.get("input")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise BadRequest("Missing required parameter: 'model'.")
    if body.get("stream") is not True:
        raise BadRequest("this provider fixture only streams")
    if isinstance(items, str):
        return []
    if not isinstance(items, list):
        raise BadRequest("Invalid type for 'input': expected a string or an array.")
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or not tool.get("name") or not isinstance(tool.get("parameters"), dict):
            raise BadRequest("Invalid tool definition.")
    calls: set[str] = set()
    answered: set[str] = set()
    results: list[Result] = []
    for index, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            allowed = {"user": {"input_text"}, "developer": {"input_text"}, "system": {"input_text"},
                       "assistant": {"output_text", "refusal"}}.get(role)
            if allowed is None:
                raise BadRequest(f"Invalid value: '{role}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.")
            content = item.get("content")
            if isinstance(content, list):
                for part in content:
                    if part.get("type") not in allowed or not isinstance(part.get("text"), str):
                        raise BadRequest(f"Invalid value: '{part.get('type')}'. Supported values are: {sorted(allowed)}.")
            elif not isinstance(content, str):
                raise BadRequest(f"Invalid type for 'input[{index}].content'.")
        elif kind == "function_call":
            if not str(item.get("call_id", "")) or not item.get("name") or not isinstance(item.get("arguments"), str):
                raise BadRequest(f"Missing required parameter: 'input[{index}].call_id'.")
            calls.add(item["call_id"])
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in calls:
                raise BadRequest(f"No tool call found for function call output with call_id {call_id}.")
            output = item.get("output")
            if not isinstance(output, str):
                raise BadRequest(f"Invalid type for 'input[{index}].output': expected a string.")
            answered.add(call_id)
            results.append(Result(call_id, output, output.startswith('{"ok":false')))
        elif kind == "reasoning":
            if not str(item.get("id", "")).startswith("rs_") or not item.get("encrypted_content"):
                raise BadRequest(f"Item 'input[{index}]' of type 'reasoning' needs its id and encrypted_content when store is false.")
            if index + 1 >= len(items):
                raise BadRequest(f"Item '{item.get('id')}' of type 'reasoning' was provided without its required following item.")
        else:
            raise BadRequest(f"Invalid value: '{kind}'.")
    missing = calls - answered
    if missing:
        raise BadRequest(f"No tool output found for function call {min(missing)}.")
    return results


def responses_events(parts: list[Part], model: str, seed: str, style: Style) -> list[dict[str, Any]]:
    """The event objects of one streamed Response, ``sequence_number`` and all."""
    response_id = _uid("resp_", seed, 32)
    base = {"id": response_id, "object": "response", "created_at": 1764460800, "model": model,
            "parallel_tool_calls": True, "store": False, "tool_choice": "auto", "tools": [], "error": None,
            "incomplete_details": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**base, "status": "in_progress", "output": [], "usage": None}},
        {"type": "response.in_progress", "response": {**base, "status": "in_progress", "output": [], "usage": None}},
    ]
    output: list[dict[str, Any]] = []
    plan: list[Part] = ([Reasoning("Planning the write first.")] if style.reasoning else [])
    plan += ([Text("I'll take care of that now.")] if style.preamble and any(isinstance(p, Call) for p in parts) else [])
    ending = next((p.kind for p in parts if isinstance(p, End)), None)
    for index, part in enumerate(p for p in [*plan, *parts] if not isinstance(p, End)):
        item_seed = f"{seed}/{index}"
        if isinstance(part, Text):
            item_id = _uid("msg_", item_seed, 32)
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": {"id": item_id, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}})
            where = {"item_id": item_id, "output_index": index, "content_index": 0}
            events.append({"type": "response.content_part.added", **where,
                           "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}})
            deltas = _pieces(part.text, 3)
            if style.empty_deltas:
                deltas = ["", *deltas, ""]
            events += [{"type": "response.output_text.delta", **where, "delta": d, "logprobs": [], "obfuscation": "x1"} for d in deltas]
            events.append({"type": "response.output_text.done", **where, "text": part.text, "logprobs": []})
            done_part = {"type": "output_text", "annotations": [], "logprobs": [], "text": part.text}
            events.append({"type": "response.content_part.done", **where, "part": done_part})
            item = {"id": item_id, "type": "message", "status": "completed", "content": [done_part], "role": "assistant"}
        elif isinstance(part, Call):
            item_id = _uid("fc_", item_seed, 40)
            call_id = (f"call_{index}" if style.ids_restart_each_response
                       else _uid("toolu_01" if style.swapped_ids else "call_", item_seed + "/call", 24))
            arguments = json.dumps(part.arguments, ensure_ascii=False, separators=(",", ":"))
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "",
                                    "call_id": call_id, "name": part.name}})
            events += [{"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": index,
                        "delta": d, "obfuscation": "q"} for d in _pieces(arguments, 5)]
            events.append({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": index,
                           "arguments": arguments})
            item = {"id": item_id, "type": "function_call", "status": "completed", "arguments": arguments,
                    "call_id": call_id, "name": part.name}
        else:
            item_id = _uid("rs_", item_seed, 40)
            blob = "gAAAAAB" + _uid("", item_seed + "/blob", 60)
            events.append({"type": "response.output_item.added", "output_index": index,
                           "item": {"id": item_id, "type": "reasoning", "summary": [], "encrypted_content": blob}})
            where = {"item_id": item_id, "output_index": index, "summary_index": 0}
            events.append({"type": "response.reasoning_summary_part.added", **where, "part": {"type": "summary_text", "text": ""}})
            events += [{"type": "response.reasoning_summary_text.delta", **where, "delta": d, "obfuscation": "r"}
                       for d in _pieces(part.summary, 8)]
            events.append({"type": "response.reasoning_summary_text.done", **where, "text": part.summary})
            events.append({"type": "response.reasoning_summary_part.done", **where,
                           "part": {"type": "summary_text", "text": part.summary}})
            item = {"id": item_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": part.summary}],
                    "encrypted_content": blob}
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        output.append(item)
    usage = {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1024}, "output_tokens": 37,
             "output_tokens_details": {"reasoning_tokens": 12 if style.reasoning else 0}, "total_tokens": 1237}
    if ending == "failed":
        error = {"code": "server_error", "message": "The model produced invalid content."}
        events.append({"type": "response.failed", "response": {**base, "status": "failed", "output": output, "error": error, "usage": None}})
    elif ending == "error":
        events.append({"type": "error", "code": "invalid_prompt", "message": "Invalid prompt: flagged.", "param": None})
    elif ending == "max-tokens":
        events.append({"type": "response.incomplete", "response": {
            **base, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": output, "usage": usage}})
    else:
        events.append({"type": "response.completed", "response": {**base, "status": "completed", "output": output, "usage": usage}})
    return [{**event, "sequence_number": number} for number, event in enumerate(events)]


# --- Anthropic Messages ---------------------------------------------------------------------------


_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")


def messages_results(body: dict[str, Any], headers: dict[str, str]) -> list[Result]:
    """Validate the request as the Messages API does; the tool results it carries."""
    if "anthropic-version" not in headers:
        raise BadRequest("anthropic-version: header is required")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise BadRequest("model: Field required")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        raise BadRequest("max_tokens: Field required")
    if body.get("stream") is not True:
        raise BadRequest("this provider fixture only streams")
    for tool in body.get("tools") or []:
        schema = tool.get("input_schema")
        if not tool.get("name") or not isinstance(schema, dict) or schema.get("type") != "object":
            raise BadRequest("tools.0.custom.input_schema: Field required")
    system = body.get("system")
    cached = 0
    if isinstance(system, list):
        for block in system:
            if block.get("type") != "text" or not block.get("text"):
                raise BadRequest("system: text content blocks must be non-empty")
            cached += "cache_control" in block
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: at least one message is required")
    results: list[Result] = []
    pending: set[str] = set()
    for number, message in enumerate(messages):
        role = message.get("role")
        expected = "user" if number % 2 == 0 else "assistant"
        if role != expected:
            raise BadRequest(f"messages.{number}.role: roles must alternate between \"user\" and \"assistant\", starting with \"user\"")
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list) or not content:
            raise BadRequest(f"messages.{number}: all messages must have non-empty content")
        uses: set[str] = set()
        for place, block in enumerate(content):
            kind = block.get("type")
            cached += "cache_control" in block
            where = f"messages.{number}.content.{place}"
            if kind == "text":
                if not isinstance(block.get("text"), str) or not block["text"]:
                    raise BadRequest(f"{where}.text: text content blocks must be non-empty")
            elif kind == "tool_use" and role == "assistant":
                if not _TOOL_USE_ID.fullmatch(str(block.get("id", ""))) or not isinstance(block.get("input"), dict):
                    raise BadRequest(f"{where}: tool_use blocks need an id and an object input")
                uses.add(block["id"])
            elif kind == "tool_result" and role == "user":
                if block.get("tool_use_id") not in pending:
                    raise BadRequest(
                        f"{where}: unexpected `tool_use_id` found in `tool_result` blocks: {block.get('tool_use_id')}. "
                        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                    )
                pending.discard(block["tool_use_id"])
                text = block.get("content", "")
                if isinstance(text, list):
                    text = "".join(b.get("text", "") for b in text if b.get("type") == "text")
                results.append(Result(block["tool_use_id"], text, bool(block.get("is_error"))))
            elif kind in ("thinking", "redacted_thinking") and role == "assistant":
                if kind == "thinking" and not block.get("signature"):
                    raise BadRequest(f"{where}.thinking.signature: Field required")
            else:
                raise BadRequest(f"{where}: unexpected block type `{kind}` in a {role} message")
        if pending:
            raise BadRequest(
                f"messages.{number}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(sorted(pending))}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
            )
        pending = uses
    if pending:
        raise BadRequest("the last message is an assistant turn with unanswered `tool_use` blocks")
    if cached > 4:
        raise BadRequest(f"A maximum of 4 blocks with cache_control may be provided. Found {cached}.")
    return results


def messages_events(parts: list[Part], model: str, seed: str, style: Style) -> list[dict[str, Any]]:
    """The event objects of one streamed Message."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {
            "id": _uid("msg_01", seed, 22), "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 176, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1024,
                      "output_tokens": 1, "service_tier": "standard"}}},
    ]
    if style.keep_alive:
        events.append({"type": "ping"})
    plan: list[Part] = ([Reasoning("Planning the write first.")] if style.reasoning else [])
    has_call = any(isinstance(p, Call) for p in parts)
    plan += ([Text("I'll take care of that now.")] if style.preamble and has_call else [])
    if style.empty_text_block and has_call:
        plan.append(Text(""))
    ending = next((p.kind for p in parts if isinstance(p, End)), None)
    for index, part in enumerate(p for p in [*plan, *parts] if not isinstance(p, End)):
        item_seed = f"{seed}/{index}"
        at = {"index": index}
        if isinstance(part, Text):
            events.append({"type": "content_block_start", **at, "content_block": {"type": "text", "text": ""}})
            deltas = _pieces(part.text, 3) if part.text else []
            if style.empty_deltas:
                deltas = ["", *deltas]
            events += [{"type": "content_block_delta", **at, "delta": {"type": "text_delta", "text": d}} for d in deltas]
        elif isinstance(part, Call):
            arguments = json.dumps(part.arguments, ensure_ascii=False, separators=(",", ":"))
            events.append({"type": "content_block_start", **at, "content_block": {
                "type": "tool_use",
                "id": f"toolu_{index}" if style.ids_restart_each_response
                else _uid("call_" if style.swapped_ids else "toolu_01", item_seed, 22),
                "name": part.name, "input": {}}})
            events += [{"type": "content_block_delta", **at, "delta": {"type": "input_json_delta", "partial_json": d}}
                       for d in ["", *_pieces(arguments, 7)]]
        else:
            events.append({"type": "content_block_start", **at, "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
            events += [{"type": "content_block_delta", **at, "delta": {"type": "thinking_delta", "thinking": d}}
                       for d in _pieces(part.summary, 8)]
            events.append({"type": "content_block_delta", **at,
                           "delta": {"type": "signature_delta", "signature": "EqQB" + _uid("", item_seed, 40)}})
        events.append({"type": "content_block_stop", **at})
        if style.keep_alive and index == 0:
            events.append({"type": "ping"})
    if ending in ("failed", "error"):
        events.append({"type": "error", "error": {"type": "invalid_request_error", "message": "Output blocked by content filtering policy"}})
        return events
    stop = {"max-tokens": "max_tokens", "refusal": "refusal"}.get(ending or "", "tool_use" if has_call else "end_turn")
    delta: dict[str, Any] = {"stop_reason": stop, "stop_sequence": None}
    if stop == "refusal":
        delta["stop_details"] = {"category": "cyber", "explanation": "The request was declined."}
    events.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": 37}})
    events.append({"type": "message_stop"})
    return events


# --- framing and the server -----------------------------------------------------------------------


def frame_events(events: list[dict[str, Any]], style: Style, done_sentinel: bool) -> bytes:
    """SSE bytes of the events in the given style."""
    end = style.line_end
    prefix = "data: " if style.data_space else "data:"
    out: list[str] = []
    for number, event in enumerate(events):
        if style.keep_alive:
            out.append(f": keep-alive{end}{end}")
        lines = [f"event: {event['type']}"] if style.event_lines else []
        lines += [f"id: {number}", "retry: 3000"] if style.sse_ids else []
        text = json.dumps(event, ensure_ascii=False, indent=1 if style.multiline_data else None)
        lines += [prefix + line for line in text.split("\n")]
        out.append(end.join(lines) + end + end)
    if done_sentinel:
        out.append(f"{prefix}[DONE]{end}{end}")
    return "".join(out).encode()


def _pieces_of(data: bytes, size: int) -> list[bytes]:
    if size <= 0:
        return [data]
    return [data[i : i + size] for i in range(0, len(data), size)]


class Provider(ThreadingHTTPServer):
    """The server: one scenario, one style, an optional API key; what it saw, in ``seen``."""

    daemon_threads = True

    def __init__(self, scenario: str, style: Style, api_key: str | None, model: str | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scenario = SCENARIOS[scenario]
        self.style = style
        self.api_key = api_key
        self.model = model
        self.lock = threading.Lock()
        self.posts = 0
        self.seen: list[Seen] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client closing its kept-alive connection is not an error worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Provider

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        headers = {name.lower(): value for name, value in self.headers.items()}
        body_bytes = self.rfile.read(int(self.headers.get("content-length", "0")))
        wire = {"/v1/responses": "openai-responses", "/v1/messages": "anthropic-messages"}.get(path)
        with self.server.lock:
            self.server.posts += 1
            number = self.server.posts
        seen = Seen(path, headers, 200)
        self.server.seen.append(seen)
        if wire is None:
            seen.status = 404
            self._json(404, {"error": {"message": f"Invalid URL (POST {path})", "type": "invalid_request_error"}})
            return
        style = self.server.style
        if number <= len(style.first_statuses):
            status, retry_after = style.first_statuses[number - 1]
            seen.status = status
            if retry_after == "http-date+1":
                retry_after = formatdate(time.time() + 1, usegmt=True)
            extra = {"retry-after": retry_after} if retry_after is not None else {}
            if wire == "openai-responses":
                self._json(status, {"error": {"message": "Rate limit reached, slow down", "type": "requests",
                                              "param": None, "code": "rate_limit_exceeded"}}, extra)
            else:
                self._json(status, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, extra)
            return
        if not self._authorised(wire, headers):
            seen.status = 401
            return
        try:
            body = json.loads(body_bytes)
            if wire == "openai-responses":
                seen.results = responses_results(body)
            else:
                seen.results = messages_results(body, headers)
        except (BadRequest, ValueError, AttributeError, TypeError) as problem:
            seen.status, seen.error = 400, str(problem)
            if wire == "openai-responses":
                self._json(400, {"error": {"message": str(problem), "type": "invalid_request_error", "param": None, "code": None}})
            else:
                self._json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": str(problem)}})
            return
        parts = self.server.scenario(seen.results)
        model = self.server.model or body["model"]
        seed = f"{number}/{len(seen.results)}"
        if wire == "openai-responses":
            events = responses_events(parts, model, seed, style)
        else:
            events = messages_events(parts, model, seed, style)
        breaks = style.first_stream_breaks if number == len(style.first_statuses) + 1 else ""
        if breaks:
            seen.status = 0
            events = events[: len(events) // 2]
        if breaks == "overloaded" and wire == "anthropic-messages":
            events.append({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        done_sentinel = style.done_sentinel and wire == "openai-responses" and not breaks
        self._stream(frame_events(events, style, done_sentinel), style, cut=bool(breaks) and breaks != "overloaded")

    def _authorised(self, wire: str, headers: dict[str, str]) -> bool:
        key = self.server.api_key
        if key is None:
            return True
        if wire == "openai-responses":
            if headers.get("authorization") == f"Bearer {key}":
                return True
            self._json(401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                       "param": None, "code": "invalid_api_key"}})
            return False
        if headers.get("x-api-key") == key:
            return True
        self._json(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
        return False

    def _json(self, status: int, value: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        if self.server.style.gzip:
            data = gzip.compress(data)
            self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(data)))
        for name, header in (extra or {}).items():
            self.send_header(name, header)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, stream: bytes, style: Style, cut: bool = False) -> None:
        """The stream in the style; ``cut`` drops the connection where the bytes end, as a failing peer does."""
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        if style.gzip or style.mislabelled_gzip:
            self.send_header("content-encoding", "gzip")
        if style.chunked:
            self.send_header("transfer-encoding", "chunked")
            self.send_header("connection", "keep-alive")
        elif style.holds_connection_open:
            self.send_header("connection", "keep-alive")
        else:
            self.send_header("connection", "close")
            self.close_connection = True
        self.end_headers()
        compressor = zlib.compressobj(wbits=31) if style.gzip else None
        for number, piece in enumerate(_pieces_of(stream, style.chunk)):
            if compressor is not None:
                piece = compressor.compress(piece) + compressor.flush(zlib.Z_SYNC_FLUSH)
            self._send_piece(piece, style)
            if style.chunk and number % 16 == 0:
                time.sleep(max(style.pause_ms, 1) / 1000)
        if cut:
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if compressor is not None:
            self._send_piece(compressor.flush(), style)
        if style.chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        if style.drops_idle_connections:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send_piece(self, piece: bytes, style: Style) -> None:
        if not piece:
            return
        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if style.chunked else piece)
        self.wfile.flush()


@contextmanager
def running_provider(
    scenario: str, style: Style = STYLES[0], api_key: str | None = None, model: str | None = None
) -> Iterator[Provider]:
    """The provider serving on a loopback port in a daemon thread; shut down on the way out."""
    provider = Provider(scenario, style, api_key, model)
    thread = threading.Thread(target=provider.serve_forever, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        provider.shutdown()
        provider.server_close()
        thread.join(timeout=10)
