"""A codex catalogue run's ``codex app-server`` conversation as a pure state machine
(docs/adapters/codex.md#catalogue-app-server, docs/hermetic.md#catalogue-delivery, #calling-a-catalogue-entry).

The wire is JSON-RPC without a ``jsonrpc`` member, one object per line. The client sends
``initialize`` (negotiating ``experimentalApi``, which ``dynamicTools`` need), then ``initialized``;
each answer moves it on: ``thread/start`` with no execution environment and the catalogue entries
as dynamic tools, then ``turn/start`` with the user turn, then it serves the server's requests until
``turn/completed``.

``read_server_line`` folds one line of the server's stdout into the ``Session`` and says what to do:
``Send`` a line to the server, ``Decide`` an ``item/tool/call`` (the run presents it on seam
``owned_tool`` to the decision desk), ``Warn`` with an event, ``Note`` for stderr, or
``TurnCompleted``. A decision comes back through ``answer_decision``: a deny is answered as a
failure carrying its reason and nothing is performed; any other decision is performed as an MCP
``tools/call`` on the catalogue server (``mcp-serve --catalogue``, which runs
docs/hermetic.md#calling-a-catalogue-entry's checks), and ``read_catalogue_server_line`` turns that server's answer into
the dynamic tool's answer. Nothing here reads or writes; no line, however malformed, raises.
"""

from __future__ import annotations

import posixpath
from typing import Any, Literal

import msgspec

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.catalogue import Catalogue, input_schema, needs_writable, resolve_catalogue_call
from metaharness.pure.decisions import PresentedCall
from metaharness.pure.events import Decision, Deny, Replace, WarningRaised
from metaharness.pure.jsonline import compact
from metaharness.pure.terminal_text import shown

CATALOGUE_COPY = "catalogue.json"
"""The scratch copy the catalogue server reads (docs/hermetic.md#catalogue-scratch-copy)."""

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

DECLINED: dict[str, Any] = {
    "item/commandExecution/requestApproval": {"decision": "decline"},
    "item/fileChange/requestApproval": {"decision": "decline"},
    "item/permissions/requestApproval": {"permissions": {}},
    "mcpServer/elicitation/request": {"action": "decline"},
    "execCommandApproval": {"decision": "denied"},
    "applyPatchApproval": {"decision": "denied"},
}
"""The server's approval and elicitation requests and their declines at 0.171.0 (docs/adapters/codex.md: command,
file-change and permissions approvals and elicitations are declined; a permissions request is
granted nothing)."""

Phase = Literal["initialize", "thread", "turn", "running", "completed", "failed"]


class Send(msgspec.Struct, frozen=True):
    """Write ``line`` (compact JSON and ``\\n``) to the app-server's stdin."""

    line: bytes


class Decide(msgspec.Struct, frozen=True):
    """An ``item/tool/call`` to decide on seam ``owned_tool`` before anything is performed."""

    call_id: str
    tool: str
    arguments: Any


class Perform(msgspec.Struct, frozen=True):
    """Write ``line`` (an MCP ``tools/call``) to the catalogue server's stdin."""

    line: bytes


class Warn(msgspec.Struct, frozen=True):
    """Write this warning to the stream."""

    warning: WarningRaised


class Note(msgspec.Struct, frozen=True):
    """A line for metaharness's stderr: what the server did that the stream does not carry."""

    text: str


class TurnCompleted(msgspec.Struct, frozen=True):
    """``turn/completed`` for the thread's turn: close the server's stdin, stop its group 5 s later."""


Step = Send | Decide | Perform | Warn | Note | TurnCompleted


class OpenCall(msgspec.Struct, frozen=True):
    """An ``item/tool/call`` the server waits on: its request id, tool and arguments; ``performing``
    is the catalogue server's request id once it was sent there."""

    request_id: Any
    call_id: str
    tool: str
    arguments: Any
    performing: int | None = None


class Session(msgspec.Struct, frozen=True, kw_only=True):
    """Where the conversation stands. ``waiting`` maps the ids of the client's own requests to their
    methods; ``calls`` are the tool calls not yet answered."""

    phase: Phase = "initialize"
    thread_start: dict[str, Any]
    user_turn: str
    thread_id: str | None = None
    waiting: tuple[tuple[int, str], ...] = ()
    next_id: int = 0
    next_perform: int = 0
    calls: tuple[OpenCall, ...] = ()


def app_server_args() -> tuple[str, ...]:
    """``codex --dangerously-bypass-hook-trust app-server --strict-config --listen stdio://``'s
    arguments (docs/adapters/codex.md): the hook trust bypass is a global flag, so it precedes the subcommand."""
    return ("--dangerously-bypass-hook-trust", "app-server", "--strict-config", "--listen", "stdio://")


def catalogue_server_args(own_cli: tuple[str, ...], scratch: str, cwd: str, catalogue: Catalogue) -> tuple[str, ...]:
    """``<own_cli> mcp-serve --catalogue <scratch>/catalogue.json --workspace <cwd> [--writable]``, where
    ``own_cli`` is the argv the shell gathered that starts this build's own CLI, ``--writable`` exactly
    when an entry writes (docs/adapters/codex.md, docs/hermetic.md#catalogue-delivery)."""
    served = (*own_cli, "mcp-serve", "--catalogue", posixpath.join(scratch, CATALOGUE_COPY))
    return (*served, "--workspace", cwd, *(("--writable",) if needs_writable(catalogue) else ()))


def dynamic_tools(catalogue: Catalogue) -> list[dict[str, Any]]:
    """One ``{type:"function", name, description, inputSchema}`` per entry, the schema of
    docs/hermetic.md#catalogue-document."""
    return [
        {"type": "function", "name": entry.name, "description": entry.description, "inputSchema": input_schema(entry)}
        for entry in catalogue.entries
    ]


def _line(message: dict[str, Any]) -> bytes:
    return compact(message) + b"\n"


def _request(session: Session, method: str, params: dict[str, Any]) -> tuple[Session, Send]:
    number = session.next_id
    session = msgspec.structs.replace(session, next_id=number + 1, waiting=(*session.waiting, (number, method)))
    return session, Send(_line({"id": number, "method": method, "params": params}))


def open_session(
    *, version: str, cwd: str, model: str | None, sandbox: str, catalogue: Catalogue, user_turn: str
) -> tuple[Session, tuple[Step, ...]]:
    """The session before the server has said anything, and its first line: ``initialize`` with
    ``clientInfo`` and ``capabilities.experimentalApi`` (docs/adapters/codex.md step 1)."""
    thread_start: dict[str, Any] = {"cwd": cwd}
    if model is not None:
        thread_start["model"] = model
    thread_start |= {
        "approvalPolicy": "never",
        "sandbox": sandbox,
        "environments": [],
        "dynamicTools": dynamic_tools(catalogue),
    }
    session = Session(thread_start=thread_start, user_turn=user_turn)
    session, send = _request(
        session,
        "initialize",
        {"clientInfo": {"name": "metaharness", "version": version}, "capabilities": {"experimentalApi": True}},
    )
    return session, (send,)


def _answer(request_id: Any, result: Any) -> Send:
    return Send(_line({"id": request_id, "result": result}))


def _error(request_id: Any, code: int, message: str) -> Send:
    return Send(_line({"id": request_id, "error": {"code": code, "message": message}}))


def tool_answer(request_id: Any, text: str, success: bool) -> Send:
    """The answer to an ``item/tool/call``: ``{contentItems:[{type:"inputText", text}], success}``."""
    return _answer(request_id, {"contentItems": [{"type": "inputText", "text": text}], "success": success})


def read_server_line(session: Session, line: bytes) -> tuple[Session, tuple[Step, ...]]:
    """One line of the server's stdout: a response to the client's request, a request of the
    server's, or a notification. A line that is not a JSON object is noted and otherwise ignored."""
    try:
        message = decode_bounded(line)
    except (msgspec.DecodeError, ValueError):
        return session, (Note(f"codex app-server wrote a line that is not JSON ({len(line)} bytes)"),)
    if not isinstance(message, dict):
        return session, (Note("codex app-server wrote a JSON value that is not an object"),)
    method = message.get("method")
    if "id" in message and isinstance(method, str):
        return _server_request(session, message["id"], method, message.get("params"))
    if "id" in message:
        return _response(session, message)
    if method == "turn/completed":
        return _turn_completed(session, message.get("params"))
    return session, ()


def _response(session: Session, message: dict[str, Any]) -> tuple[Session, tuple[Step, ...]]:
    """The server's answer to ``initialize``, ``thread/start`` or ``turn/start``; an error stops the run."""
    request_id = message["id"]
    method = next((m for number, m in session.waiting if number == request_id and type(request_id) is int), None)
    if method is None:
        return session, (Note(f"codex app-server answered a request metaharness did not send (id {request_id!r})"),)
    session = msgspec.structs.replace(session, waiting=tuple(w for w in session.waiting if w[0] != request_id))
    result = message.get("result")
    if "error" in message or not isinstance(result, dict):
        failed = msgspec.structs.replace(session, phase="failed")
        return failed, (Note(f"codex app-server refused {method}: {_error_text(message.get('error'))}"),)
    if method == "initialize":
        session, initialized = msgspec.structs.replace(session, phase="thread"), Send(_line({"method": "initialized"}))
        session, start = _request(session, "thread/start", session.thread_start)
        return session, (initialized, start)
    if method == "thread/start":
        thread = result.get("thread")
        thread_id = thread.get("id") if isinstance(thread, dict) else None
        if not isinstance(thread_id, str):
            return msgspec.structs.replace(session, phase="failed"), (
                Note("codex app-server answered thread/start without a thread id"),
            )
        session = msgspec.structs.replace(session, phase="turn", thread_id=thread_id)
        session, start = _request(
            session, "turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": session.user_turn}]}
        )
        return session, (start,)
    return (msgspec.structs.replace(session, phase="running") if session.phase == "turn" else session), ()


def _error_text(error: Any) -> str:
    """The server's error as one line of text a terminal prints as text (docs/view.md#control-characters)."""
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str):
        return shown(message, one_line=True)
    return "it gave no result" if error is None else shown(compact(error).decode("utf-8", "replace"), one_line=True)


def _turn_completed(session: Session, params: Any) -> tuple[Session, tuple[Step, ...]]:
    thread_id = params.get("threadId") if isinstance(params, dict) else None
    if session.phase in ("completed", "failed") or thread_id != session.thread_id:
        return session, ()
    return msgspec.structs.replace(session, phase="completed"), (TurnCompleted(),)


def _server_request(session: Session, request_id: Any, method: str, params: Any) -> tuple[Session, tuple[Step, ...]]:
    """A request of the server's (docs/adapters/codex.md, design choice): ``item/tool/call`` is decided;
    approvals and elicitations are declined; ``item/tool/requestUserInput`` gets no answers and a
    ``COVERAGE_GAP``; anything else is ``-32601``."""
    if method == "item/tool/call":
        return _tool_call(session, request_id, params)
    if method in DECLINED:
        return session, (_answer(request_id, DECLINED[method]),)
    if method == "item/tool/requestUserInput":
        gap = WarningRaised(
            code="COVERAGE_GAP",
            message="codex app-server asked for user input (item/tool/requestUserInput); metaharness answered "
            "with no answers, and the question reached no decision seam",
        )
        return session, (_answer(request_id, {"answers": {}}), Warn(gap))
    return session, (_error(request_id, METHOD_NOT_FOUND, f"method not found: {method}"),)


def _tool_call(session: Session, request_id: Any, params: Any) -> tuple[Session, tuple[Step, ...]]:
    if (
        not isinstance(params, dict)
        or not isinstance(params.get("callId"), str)
        or not isinstance(params.get("tool"), str)
    ):
        return session, (_error(request_id, INVALID_PARAMS, "item/tool/call params need a string callId and tool"),)
    call = OpenCall(request_id, params["callId"], params["tool"], params.get("arguments"))
    if any(open_call.call_id == call.call_id for open_call in session.calls):
        return session, (tool_answer(request_id, f"call {call.call_id} is already being answered", False),)
    session = msgspec.structs.replace(session, calls=(*session.calls, call))
    return session, (Decide(call.call_id, call.tool, call.arguments),)


def presented_tool_call(catalogue: Catalogue, call_id: str, tool: str, arguments: Any) -> PresentedCall:
    """An ``item/tool/call`` for the decision desk on seam ``owned_tool``: the entry's operation and the
    performing entry's subjects; none for a name outside the catalogue (code mode's ``exec``, say) or
    an entry this build does not perform, so a frame denies it as ``UNCOVERED_TOOL``
    (docs/hermetic.md#what-an-entry-performs)."""
    operations, subjects = resolve_catalogue_call(catalogue, tool, arguments)
    return PresentedCall(
        call_id=call_id, name=tool, input=arguments, seam="owned_tool", operations=operations, subjects=subjects
    )


def answer_decision(session: Session, call_id: str, decision: Decision) -> tuple[Session, tuple[Step, ...]]:
    """The desk's decision on ``call_id``: a deny answers a failure with its reason and performs
    nothing; allow and abstain perform the call as the model wrote it, a replace with its input. A
    call no longer open (answered already) yields nothing."""
    call = next((c for c in session.calls if c.call_id == call_id and c.performing is None), None)
    if call is None:
        return session, ()
    if isinstance(decision, Deny):
        return _close(session, call_id), (tool_answer(call.request_id, decision.reason, False),)
    arguments = decision.input if isinstance(decision, Replace) else call.arguments
    number = session.next_perform
    performing = msgspec.structs.replace(call, performing=number)
    calls = tuple(performing if c.call_id == call_id else c for c in session.calls)
    session = msgspec.structs.replace(session, calls=calls, next_perform=number + 1)
    request: dict[str, Any] = {"name": call.tool}
    if arguments is not None:
        request["arguments"] = arguments
    return session, (Perform(_line({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": request})),)


def _close(session: Session, call_id: str) -> Session:
    return msgspec.structs.replace(session, calls=tuple(c for c in session.calls if c.call_id != call_id))


def read_catalogue_server_line(session: Session, line: bytes) -> tuple[Session, tuple[Step, ...]]:
    """The catalogue server's answer to a ``tools/call``: its text items joined, ``success`` false on
    ``isError`` or a JSON-RPC error (docs/adapters/codex.md). Anything else is noted and ignored."""
    try:
        message = decode_bounded(line)
    except (msgspec.DecodeError, ValueError):
        return session, (Note(f"the catalogue server wrote a line that is not JSON ({len(line)} bytes)"),)
    number = message.get("id") if isinstance(message, dict) else None
    call = next((c for c in session.calls if c.performing is not None and c.performing == number), None)
    if call is None or type(number) is not int:
        return session, (Note("the catalogue server wrote an answer to no call metaharness sent it"),)
    result = message.get("result")
    if isinstance(result, dict) and isinstance(result.get("content"), list):
        text = "".join(
            item["text"] for item in result["content"] if isinstance(item, dict) and isinstance(item.get("text"), str)
        )
        success = result.get("isError") is False
    else:
        text, success = f"the catalogue server failed the call: {_error_text(message.get('error'))}", False
    return _close(session, call.call_id), (tool_answer(call.request_id, text, success),)


def catalogue_server_gone(session: Session) -> tuple[Session, tuple[Step, ...]]:
    """The catalogue server ended: every call sent to it is answered as a failure."""
    sent = tuple(c for c in session.calls if c.performing is not None)
    answers = tuple(
        tool_answer(c.request_id, "the catalogue server ended before it answered; whether it ran is unknown", False)
        for c in sent
    )
    return msgspec.structs.replace(session, calls=tuple(c for c in session.calls if c.performing is None)), answers
