"""``b10x-harness app-server``'s JSON-RPC conversation as a pure state machine (docs/loop-extensions.md).

The wire is the codex app-server's v2 shape: JSON-RPC 2.0 without the ``jsonrpc`` member, one object
per line, profile ``codex-app-server-stdio-v2-dynamic-operation-tools-experimental``. The client sends
``initialize`` (``experimentalApi`` is granted only when asked for), ``initialized``, ``thread/start``
with its ``dynamicTools``, then ``turn/start`` and ``turn/interrupt``; ``thread/resume`` and
``turn/steer`` are refused by name (``-32601``, ``<method> is not supported by b10x-harness app-server``),
as is every method it does not serve. The model's calls of a registered tool go to the client as
``item/tool/call``; the record lines of a turn become its notifications.

``read_client_line`` folds one client line into the ``Bridge`` and says what to do: ``Send`` a line,
``BeginTurn``, ``Interrupt`` the running turn, or deliver an ``Answered`` server request. Nothing here
reads or writes; no line, however malformed, raises.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.jsonline import compact
from metaharness.pure.loop import budget
from metaharness.pure.loop.record import (
    RecordLine,
    TextDelta,
    ToolCompleted,
    ToolRequested,
    TurnStarted,
    UsageLine,
)
from metaharness.pure.wires.neutral import ToolSpec

PROFILE = "codex-app-server-stdio-v2-dynamic-operation-tools-experimental"
LINE_CAP = 8 * 1024 * 1024
ANSWER_CAP = 256 * 1024
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
THREAD_ID = "thread_b10x_1"
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class Send(msgspec.Struct, frozen=True):
    """Write ``line`` (compact JSON and ``\\n``) to the client."""

    line: bytes


class BeginTurn(msgspec.Struct, frozen=True):
    """Run turn ``turn_id`` with the client's texts as user items."""

    turn_id: str
    texts: tuple[str, ...]


class Interrupt(msgspec.Struct, frozen=True):
    """Cancel the running turn ``turn_id``; it ends ``interrupted``."""

    turn_id: str


class Answered(msgspec.Struct, frozen=True):
    """The client answered server request ``request_id``; ``size`` is its line's length in bytes."""

    request_id: int
    result: Any
    error: Any
    size: int


Step = Send | BeginTurn | Interrupt | Answered


class DynamicTool(msgspec.Struct, frozen=True):
    """A tool the client registered on ``thread/start``."""

    name: str
    description: str
    input_schema: Any

    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        return ToolSpec(self.name, self.description, self.input_schema)


class Bridge(msgspec.Struct, frozen=True, kw_only=True):
    """Where the connection stands: the negotiation, the one thread, its tools, the running turn."""

    version: str
    initialized: bool = False
    experimental: bool = False
    thread_id: str | None = None
    cwd: str | None = None
    tools: tuple[DynamicTool, ...] = ()
    turn_id: str | None = None
    turns: int = 0
    next_request: int = 0


def _line(message: dict[str, Any]) -> bytes:
    return compact(message) + b"\n"


def _result(request_id: Any, result: Any) -> Send:
    return Send(_line({"id": request_id, "result": result}))


def error_line(request_id: Any, code: int, message: str) -> bytes:
    """A JSON-RPC error response."""
    return _line({"id": request_id, "error": {"code": code, "message": message}})


def _error(request_id: Any, code: int, message: str) -> Send:
    return Send(error_line(request_id, code, message))


def notification(method: str, params: dict[str, Any]) -> bytes:
    """A notification line."""
    return _line({"method": method, "params": params})


def read_client_line(bridge: Bridge, line: bytes) -> tuple[Bridge, tuple[Step, ...]]:
    """One client line: a request, a notification, or an answer to a server request."""
    try:
        message = decode_bounded(line)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return bridge, (_error(None, PARSE_ERROR, "the line is not JSON"),)
    if not isinstance(message, dict):
        return bridge, (_error(None, INVALID_REQUEST, "a message must be a JSON object"),)
    method = message.get("method")
    if "id" in message and method is None:
        request_id = message["id"]
        if type(request_id) is not int:
            return bridge, ()
        return bridge, (Answered(request_id, message.get("result"), message.get("error"), len(line)),)
    if not isinstance(method, str):
        return bridge, (_error(message.get("id"), INVALID_REQUEST, "a request needs a string `method`"),)
    if "id" not in message:
        return bridge, ()
    return _request(bridge, message["id"], method, message.get("params"))


def _request(bridge: Bridge, request_id: Any, method: str, params: Any) -> tuple[Bridge, tuple[Step, ...]]:
    handlers = {
        "initialize": _initialize,
        "thread/start": _thread_start,
        "turn/start": _turn_start,
        "turn/interrupt": _turn_interrupt,
    }
    handler = handlers.get(method)
    if handler is None:
        return bridge, (_error(request_id, METHOD_NOT_FOUND, f"{method} is not supported by b10x-harness app-server"),)
    if method != "initialize" and not bridge.initialized:
        return bridge, (_error(request_id, INVALID_REQUEST, f"{method} before initialize; send initialize first"),)
    return handler(bridge, request_id, params if isinstance(params, dict) else {})


def _initialize(bridge: Bridge, request_id: Any, params: dict[str, Any]) -> tuple[Bridge, tuple[Step, ...]]:
    if bridge.initialized:
        return bridge, (_error(request_id, INVALID_REQUEST, "initialize was already received on this connection"),)
    capabilities = params.get("capabilities")
    experimental = isinstance(capabilities, dict) and capabilities.get("experimentalApi") is True
    bridge = msgspec.structs.replace(bridge, initialized=True, experimental=experimental)
    result = {
        "userAgent": f"b10x-harness/{bridge.version}",
        "serverInfo": {"name": "b10x-harness", "version": bridge.version},
        "capabilities": {"experimentalApi": True, "profile": PROFILE} if experimental else {},
    }
    return bridge, (_result(request_id, result),)


def read_dynamic_tools(value: Any) -> tuple[DynamicTool, ...] | str:
    """``dynamicTools`` as registered tools, or why they are refused (malformed or duplicate names)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        return "dynamicTools must be a list of {name, description, inputSchema}"
    tools: list[DynamicTool] = []
    for entry in value:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or _TOOL_NAME.fullmatch(name) is None:
            shown = compact(name).decode() if isinstance(entry, dict) else compact(entry).decode()
            return f"dynamic tool name {shown} is malformed: 1 to 64 of A-Z, a-z, 0-9, _ and -"
        if any(tool.name == name for tool in tools):
            return f"dynamic tool `{name}` is registered twice"
        description = entry.get("description", "")
        schema = entry.get("inputSchema", {"type": "object", "properties": {}})
        if not isinstance(description, str) or not isinstance(schema, dict):
            return f"dynamic tool `{name}` needs a string description and an object inputSchema"
        tools.append(DynamicTool(name, description, schema))
    return tuple(tools)


def _thread_start(bridge: Bridge, request_id: Any, params: dict[str, Any]) -> tuple[Bridge, tuple[Step, ...]]:
    if bridge.thread_id is not None:
        return bridge, (_error(request_id, INVALID_REQUEST, "this connection already has its one thread"),)
    if params.get("dynamicTools") and not bridge.experimental:
        message = "dynamicTools need the experimentalApi capability, negotiated on initialize"
        return bridge, (_error(request_id, INVALID_REQUEST, message),)
    tools = read_dynamic_tools(params.get("dynamicTools"))
    if isinstance(tools, str):
        return bridge, (_error(request_id, INVALID_REQUEST, tools),)
    cwd = params.get("cwd") if isinstance(params.get("cwd"), str) else None
    bridge = msgspec.structs.replace(bridge, thread_id=THREAD_ID, tools=tools, cwd=cwd)
    thread = {"id": THREAD_ID}
    return bridge, (_result(request_id, {"thread": thread}), Send(notification("thread/started", {"thread": thread})))


def _turn_start(bridge: Bridge, request_id: Any, params: dict[str, Any]) -> tuple[Bridge, tuple[Step, ...]]:
    if bridge.thread_id is None or params.get("threadId") != bridge.thread_id:
        message = f"no thread {compact(params.get('threadId')).decode()} on this connection; send thread/start first"
        return bridge, (_error(request_id, INVALID_REQUEST, message),)
    if bridge.turn_id is not None:
        message = f"turn {bridge.turn_id} is running; interrupt it or wait for turn/completed"
        return bridge, (_error(request_id, INVALID_REQUEST, message),)
    items = params.get("input")
    texts = tuple(
        item["text"] for item in items if isinstance(item, dict) and item.get("type") == "text"
        and isinstance(item.get("text"), str)
    ) if isinstance(items, list) else ()
    if not texts or len(texts) != len(items or ()):
        message = 'turn/start input must be a non-empty list of {"type":"text","text":…}'
        return bridge, (_error(request_id, INVALID_REQUEST, message),)
    turn_id = f"turn_b10x_{bridge.turns + 1}"
    bridge = msgspec.structs.replace(bridge, turn_id=turn_id, turns=bridge.turns + 1)
    turn = {"id": turn_id, "status": "inProgress"}
    started = notification("turn/started", {"threadId": bridge.thread_id, "turn": turn})
    return bridge, (_result(request_id, {"turn": turn}), Send(started), BeginTurn(turn_id, texts))


def _turn_interrupt(bridge: Bridge, request_id: Any, params: dict[str, Any]) -> tuple[Bridge, tuple[Step, ...]]:
    turn_id = params.get("turnId")
    if bridge.turn_id is None or turn_id != bridge.turn_id or params.get("threadId") != bridge.thread_id:
        message = f"no running turn {compact(turn_id).decode()} on thread {compact(params.get('threadId')).decode()}"
        return bridge, (_error(request_id, INVALID_REQUEST, message),)
    return bridge, (_result(request_id, {}), Interrupt(bridge.turn_id))


def turn_status(stop: budget.StopObject | None, error: str | None) -> tuple[str, str | None]:
    """A turn's ``status`` and error message: ``completed``, ``interrupted`` on a cancel, else ``failed``."""
    if error is not None:
        return "failed", error
    if isinstance(stop, budget.Completed):
        return "completed", None
    if isinstance(stop, budget.Cancelled):
        return "interrupted", None
    return "failed", f"the turn stopped: {compact(stop).decode()}"


def turn_completed(bridge: Bridge, status: str, error: str | None) -> tuple[Bridge, bytes]:
    """The running turn is over: ``turn/completed`` with its status (and error)."""
    turn: dict[str, Any] = {"id": bridge.turn_id, "status": status}
    if error is not None:
        turn["error"] = {"message": error}
    line = notification("turn/completed", {"threadId": bridge.thread_id, "turn": turn})
    return msgspec.structs.replace(bridge, turn_id=None), line


def tool_call_request(bridge: Bridge, call_id: str, tool: str, arguments: Any) -> tuple[Bridge, int, bytes]:
    """The server request ``item/tool/call`` for a model call of a registered tool, and its id."""
    number = bridge.next_request
    params = {"threadId": bridge.thread_id, "turnId": bridge.turn_id, "callId": call_id, "tool": tool,
              "arguments": arguments}
    line = _line({"id": number, "method": "item/tool/call", "params": params})
    return msgspec.structs.replace(bridge, next_request=number + 1), number, line


def read_tool_answer(tool: str, answered: Answered) -> tuple[str, bool]:
    """The call's result text and whether it succeeded, from the client's answer; an answer past the
    bound, an error or another shape fails the call with a named text."""
    if answered.size > ANSWER_CAP:
        return f"the client's answer for `{tool}` is {answered.size} bytes, over the {ANSWER_CAP} byte bound", False
    if answered.error is not None:
        error = answered.error
        message = error.get("message") if isinstance(error, dict) else None
        shown = message if isinstance(message, str) else compact(error).decode()
        return f"the client answered item/tool/call for `{tool}` with an error: {shown}", False
    result = answered.result
    items = result.get("contentItems") if isinstance(result, dict) else None
    success = result.get("success") if isinstance(result, dict) else None
    if not isinstance(items, list) or not isinstance(success, bool) or not all(
        isinstance(item, dict) and item.get("type") == "inputText" and isinstance(item.get("text"), str)
        for item in items
    ):
        shape = '{"contentItems":[{"type":"inputText","text":…}],"success":…}'
        return f"the client's answer for `{tool}` is not {shape}", False
    return "\n".join(item["text"] for item in items), success


def unanswered_text(tool: str, timeout_ms: int) -> str:
    """The result of a call the client did not answer in time."""
    return f"the client did not answer item/tool/call for `{tool}` within {timeout_ms / 1000:g} s"


class TurnItems(msgspec.Struct, frozen=True, kw_only=True):
    """The items a turn's notifications have opened: the agent message being streamed, the calls
    announced, and the thread's usage so far (input, cached input, output)."""

    thread_id: str
    turn_id: str
    message_id: str | None = None
    message_text: str = ""
    messages: int = 0
    calls: tuple[tuple[str, str, Any], ...] = ()
    results: tuple[tuple[str, str], ...] = ()
    total: tuple[int, int, int] = (0, 0, 0)


def with_result(items: TurnItems, call_id: str, text: str) -> TurnItems:
    """The result text of call ``call_id``, for its ``item/completed`` ``contentItems``."""
    return msgspec.structs.replace(items, results=(*items.results, (call_id, text)))


def _close_message(items: TurnItems) -> tuple[TurnItems, tuple[bytes, ...]]:
    if items.message_id is None:
        return items, ()
    item = {"type": "agentMessage", "id": items.message_id, "text": items.message_text}
    line = notification("item/completed", {"threadId": items.thread_id, "turnId": items.turn_id, "item": item})
    return msgspec.structs.replace(items, message_id=None, message_text=""), (line,)


def _breakdown(input_tokens: int, cached: int, output: int) -> dict[str, int]:
    return {"totalTokens": input_tokens + output, "inputTokens": input_tokens, "cachedInputTokens": cached,
            "outputTokens": output, "reasoningOutputTokens": 0}


def notify(items: TurnItems, line: RecordLine) -> tuple[TurnItems, tuple[bytes, ...]]:
    """The notifications one record line of the turn becomes: text streams an ``agentMessage`` item;
    a call is a ``dynamicToolCall`` item (completed with the client's ``contentItems`` when it answered);
    usage is ``thread/tokenUsage/updated``."""
    where = {"threadId": items.thread_id, "turnId": items.turn_id}
    if isinstance(line, TextDelta):
        opened: tuple[bytes, ...] = ()
        if items.message_id is None:
            message_id = f"msg_{items.turn_id}_{items.messages + 1}"
            items = msgspec.structs.replace(items, message_id=message_id, messages=items.messages + 1)
            item = {"type": "agentMessage", "id": message_id, "text": ""}
            opened = (notification("item/started", {**where, "item": item}),)
        items = msgspec.structs.replace(items, message_text=items.message_text + line.text)
        delta = notification("item/agentMessage/delta", {**where, "itemId": items.message_id, "delta": line.text})
        return items, (*opened, delta)
    if isinstance(line, (TurnStarted, UsageLine, ToolRequested)):
        items, closed = _close_message(items)
        if isinstance(line, UsageLine):
            total = tuple(a + b for a, b in zip(
                items.total, (line.input_tokens, line.cached_input_tokens, line.output_tokens), strict=True))
            items = msgspec.structs.replace(items, total=(total[0], total[1], total[2]))
            usage = {"total": _breakdown(*items.total),
                     "last": _breakdown(line.input_tokens, line.cached_input_tokens, line.output_tokens)}
            return items, (*closed, notification("thread/tokenUsage/updated", {**where, "tokenUsage": usage}))
        if isinstance(line, ToolRequested):
            items = msgspec.structs.replace(items, calls=(*items.calls, (line.call_id, line.name, line.arguments)))
            item = {"type": "dynamicToolCall", "id": line.call_id, "tool": line.name, "arguments": line.arguments,
                    "status": "inProgress"}
            return items, (*closed, notification("item/started", {**where, "item": item}))
        return items, closed
    if isinstance(line, ToolCompleted):
        call = next((c for c in items.calls if c[0] == line.call_id), None)
        if call is None:
            return items, ()
        done: dict[str, Any] = {"type": "dynamicToolCall", "id": call[0], "tool": call[1], "arguments": call[2],
                                "status": "failed" if line.failed else "completed", "success": not line.failed}
        text = next((t for c, t in items.results if c == line.call_id), None)
        if text is not None:
            done["contentItems"] = [{"type": "inputText", "text": text}]
        return items, (notification("item/completed", {**where, "item": done}),)
    return items, ()


def end_items(items: TurnItems) -> tuple[TurnItems, tuple[bytes, ...]]:
    """The open agent message closed at the turn's end."""
    return _close_message(items)
