"""The codex app-server conversation as a pure machine (docs/adapters/codex.md#catalogue-app-server,
docs/hermetic.md#catalogue-delivery, #calling-a-catalogue-entry), and the catalogue's codex
stage-6 refusals over real files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from metaharness.pure.catalogue import load_catalogue
from metaharness.pure.codex.app_server import (
    Decide,
    Note,
    Perform,
    Send,
    Session,
    TurnCompleted,
    Warn,
    answer_decision,
    app_server_args,
    catalogue_server_args,
    catalogue_server_gone,
    open_session,
    presented_tool_call,
    read_catalogue_server_line,
    read_server_line,
)
from metaharness.pure.codex.doctor import APP_SERVER_FLAGS, SENT_FLAGS, codex_doctor_report
from metaharness.pure.emulator.answer import answer_request
from metaharness.pure.events import Abstain, Allow, Deny, Replace
from metaharness.pure.frames import Operation
from metaharness.shell.codex.app_server import place_catalogue
from metaharness.shell.codex.inputs import read_codex_catalogue
from metaharness.shell.facts import own_cli

DOCUMENT: dict[str, Any] = {
    "format": "metaharness.catalogue/1",
    "entries": [
        {
            "name": "read_note",
            "description": "Read one note under notes/.",
            "performs": "file_read",
            "input": {"path": {"type": "string", "required": True, "description": "Path relative to the workspace."}},
        },
        {
            "name": "write_note",
            "description": "Write one note.",
            "performs": "file_write",
            "input": {"path": {"type": "string", "required": True}, "text": {"type": "string", "required": True}},
        },
    ],
}
CATALOGUE = load_catalogue(json.dumps(DOCUMENT).encode(), "tools.json").unwrap()
THREAD = "thread-1"


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def sent(steps: tuple[Any, ...]) -> list[dict[str, Any]]:
    """The JSON objects of the ``Send`` steps, each a single compact line."""
    out = []
    for step in steps:
        if isinstance(step, Send):
            assert step.line.endswith(b"\n") and step.line.count(b"\n") == 1
            out.append(json.loads(step.line))
    return out


def opened(model: str | None = None) -> tuple[Session, tuple[Any, ...]]:
    return open_session(
        version="0.1.0", cwd="/scratch/work", model=model, sandbox="read-only", catalogue=CATALOGUE, user_turn="TURN"
    )


def running() -> Session:
    """A session the server has taken through initialize, thread/start and turn/start."""
    session, _ = opened()
    session, _ = read_server_line(session, line({"id": 0, "result": {"userAgent": "codex"}}))
    session, _ = read_server_line(session, line({"id": 1, "result": {"thread": {"id": THREAD}}}))
    session, _ = read_server_line(session, line({"id": 2, "result": {"turn": {"id": "turn-1"}}}))
    assert session.phase == "running"
    return session


def tool_call(
    session: Session, request_id: Any = 7, call_id: str = "exec-1", tool: str = "write_note", arguments: Any = None
) -> tuple[Session, tuple[Any, ...]]:
    params = {
        "threadId": THREAD,
        "turnId": "turn-1",
        "callId": call_id,
        "namespace": None,
        "tool": tool,
        "arguments": {"path": "note.md", "text": "hi\n"} if arguments is None else arguments,
    }
    return read_server_line(session, line({"method": "item/tool/call", "id": request_id, "params": params}))


def test_initialize_negotiates_the_experimental_api_without_a_jsonrpc_member():
    session, steps = opened()
    (initialize,) = sent(steps)
    assert initialize == {
        "id": 0,
        "method": "initialize",
        "params": {
            "clientInfo": {"name": "metaharness", "version": "0.1.0"},
            "capabilities": {"experimentalApi": True},
        },
    }
    assert session.phase == "initialize"


def test_initialized_then_thread_start_with_no_environment_and_the_entries_as_dynamic_tools():
    session, _ = opened()
    session, steps = read_server_line(session, line({"id": 0, "result": {}}))
    initialized, start = sent(steps)
    assert initialized == {"method": "initialized"}
    assert start["method"] == "thread/start" and start["id"] == 1
    assert start["params"] == {
        "cwd": "/scratch/work",
        "approvalPolicy": "never",
        "sandbox": "read-only",
        "environments": [],
        "dynamicTools": [
            {
                "type": "function",
                "name": "read_note",
                "description": "Read one note under notes/.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"path": {"type": "string", "description": "Path relative to the workspace."}},
                    "required": ["path"],
                    "additionalProperties": False,
                },
            },
            {
                "type": "function",
                "name": "write_note",
                "description": "Write one note.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                    "required": ["path", "text"],
                    "additionalProperties": False,
                },
            },
        ],
    }
    assert session.phase == "thread"


def test_thread_start_names_the_model_only_when_one_was_given():
    session, _ = opened(model="gpt-test")
    _, steps = read_server_line(session, line({"id": 0, "result": {}}))
    assert sent(steps)[1]["params"]["model"] == "gpt-test"


def test_the_thread_id_opens_the_turn_with_the_user_turn_as_text():
    session, _ = opened()
    session, _ = read_server_line(session, line({"id": 0, "result": {}}))
    session, steps = read_server_line(session, line({"id": 1, "result": {"thread": {"id": THREAD}}}))
    assert sent(steps) == [
        {"id": 2, "method": "turn/start", "params": {"threadId": THREAD, "input": [{"type": "text", "text": "TURN"}]}}
    ]
    assert session.thread_id == THREAD and session.phase == "turn"


def test_a_refused_thread_start_fails_the_session_and_says_why():
    session, _ = opened()
    session, _ = read_server_line(session, line({"id": 0, "result": {}}))
    error = {"code": -32600, "message": "dynamic tool name `mcp` is reserved"}
    session, steps = read_server_line(session, line({"id": 1, "error": error}))
    assert session.phase == "failed"
    assert steps == (Note("codex app-server refused thread/start: dynamic tool name `mcp` is reserved"),)


def test_a_refusals_text_reaches_the_operators_stderr_as_text_not_control_sequences():
    """The server's error message is the child's text: an OSC 52 clipboard write or a line feed forging a
    second ``metaharness:`` line is escaped in the note (docs/view.md#control-characters)."""
    session, _ = opened()
    session, _ = read_server_line(session, line({"id": 0, "result": {}}))
    error = {"code": 1, "message": "no\x1b]52;c;ZWNobyBvd25lZA==\x07\nmetaharness: control verdict: ok"}
    _, steps = read_server_line(session, line({"id": 1, "error": error}))
    assert steps == (
        Note("codex app-server refused thread/start: no\\u001b]52;c;ZWNobyBvd25lZA==\\u0007\\u000ametaharness: "
             "control verdict: ok"),
    )


def test_an_answer_to_no_request_of_ours_is_noted_and_changes_nothing():
    session = running()
    after, steps = read_server_line(session, line({"id": 99, "result": {}}))
    assert after == session and isinstance(steps[0], Note)


def test_a_tool_call_is_decided_before_anything_is_performed():
    _, steps = tool_call(running())
    assert steps == (Decide("exec-1", "write_note", {"path": "note.md", "text": "hi\n"}),)


def test_a_denied_call_is_answered_as_a_failure_with_the_reason_and_nothing_is_performed():
    session, _ = tool_call(running())
    session, steps = answer_decision(session, "exec-1", Deny('this step admits ["file.read"]'))
    assert not any(isinstance(step, Perform) for step in steps)
    assert sent(steps) == [
        {
            "id": 7,
            "result": {
                "contentItems": [{"type": "inputText", "text": 'this step admits ["file.read"]'}],
                "success": False,
            },
        }
    ]
    assert session.calls == ()
    assert answer_decision(session, "exec-1", Allow()) == (session, ())


def test_an_allowed_call_is_performed_as_a_tools_call_and_the_answer_relayed():
    session, _ = tool_call(running(), request_id="req-a")
    session, steps = answer_decision(session, "exec-1", Allow())
    (perform,) = steps
    assert isinstance(perform, Perform)
    assert json.loads(perform.line) == {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "tools/call",
        "params": {"name": "write_note", "arguments": {"path": "note.md", "text": "hi\n"}},
    }
    reply = {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {"content": [{"type": "text", "text": '{\n  "bytes": 3\n}'}], "isError": False},
    }
    session, steps = read_catalogue_server_line(session, line(reply))
    assert sent(steps) == [
        {
            "id": "req-a",
            "result": {"contentItems": [{"type": "inputText", "text": '{\n  "bytes": 3\n}'}], "success": True},
        }
    ]
    assert session.calls == ()


def test_an_entry_refusal_from_the_catalogue_server_is_a_failure():
    session, _ = tool_call(running(), arguments={"path": None})
    session, _ = answer_decision(session, "exec-1", Abstain())
    reply = {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {"content": [{"type": "text", "text": "`write_note` requires `path`"}], "isError": True},
    }
    _, steps = read_catalogue_server_line(session, line(reply))
    assert sent(steps)[0]["result"] == {
        "contentItems": [{"type": "inputText", "text": "`write_note` requires `path`"}],
        "success": False,
    }


def test_a_replace_performs_the_replacement_input():
    session, _ = tool_call(running())
    _, (perform,) = answer_decision(session, "exec-1", Replace({"path": "notes/a.md", "text": "x"}))
    assert isinstance(perform, Perform)
    assert json.loads(perform.line)["params"]["arguments"] == {"path": "notes/a.md", "text": "x"}


def test_calls_in_the_catalogue_server_when_it_ends_are_answered_as_failures():
    session, _ = tool_call(running(), request_id=1, call_id="a")
    session, _ = tool_call(session, request_id=2, call_id="b")
    session, _ = answer_decision(session, "a", Allow())
    session, steps = catalogue_server_gone(session)
    assert [(m["id"], m["result"]["success"]) for m in sent(steps)] == [(1, False)]
    assert [c.call_id for c in session.calls] == ["b"]


def test_approvals_and_elicitations_are_declined():
    expected = {
        "item/commandExecution/requestApproval": {"decision": "decline"},
        "item/fileChange/requestApproval": {"decision": "decline"},
        "item/permissions/requestApproval": {"permissions": {}},
        "mcpServer/elicitation/request": {"action": "decline"},
        "execCommandApproval": {"decision": "denied"},
        "applyPatchApproval": {"decision": "denied"},
    }
    for number, (method, answer) in enumerate(expected.items()):
        _, steps = read_server_line(running(), line({"method": method, "id": number, "params": {}}))
        assert sent(steps) == [{"id": number, "result": answer}]


def test_a_user_input_request_gets_no_answers_and_a_coverage_gap():
    _, steps = read_server_line(running(), line({"method": "item/tool/requestUserInput", "id": 3, "params": {}}))
    assert sent(steps) == [{"id": 3, "result": {"answers": {}}}]
    (warn,) = [step for step in steps if isinstance(step, Warn)]
    assert warn.warning.code == "COVERAGE_GAP"


def test_any_other_server_request_is_method_not_found():
    _, steps = read_server_line(running(), line({"method": "attestation/generate", "id": 4, "params": {}}))
    assert sent(steps) == [{"id": 4, "error": {"code": -32601, "message": "method not found: attestation/generate"}}]


def test_a_tool_call_without_a_call_id_is_invalid_params():
    _, steps = read_server_line(running(), line({"method": "item/tool/call", "id": 5, "params": {"tool": "x"}}))
    assert sent(steps)[0]["error"]["code"] == -32602


def test_turn_completed_for_the_thread_ends_the_session_once():
    session = running()
    other, steps = read_server_line(session, line({"method": "turn/completed", "params": {"threadId": "other"}}))
    assert steps == () and other.phase == "running"
    session, steps = read_server_line(session, line({"method": "turn/completed", "params": {"threadId": THREAD}}))
    assert steps == (TurnCompleted(),) and session.phase == "completed"
    assert read_server_line(session, line({"method": "turn/completed", "params": {"threadId": THREAD}}))[1] == ()


def test_notifications_and_lines_that_are_not_objects_change_nothing():
    session = running()
    assert read_server_line(session, line({"method": "item/started", "params": {}})) == (session, ())
    for raw in (b"not json\n", b"[1, 2]\n", b'"text"\n'):
        after, steps = read_server_line(session, raw)
        assert after == session and len(steps) == 1 and isinstance(steps[0], Note)


def test_the_argv_of_the_server_and_of_the_catalogue_server():
    assert app_server_args() == (
        "--dangerously-bypass-hook-trust",
        "app-server",
        "--strict-config",
        "--listen",
        "stdio://",
    )
    assert catalogue_server_args(own_cli("/py"), "/s", "/s/work", CATALOGUE) == (
        "/py",
        "-m",
        "metaharness.shell",
        "mcp-serve",
        "--catalogue",
        "/s/catalogue.json",
        "--workspace",
        "/s/work",
        "--writable",
    )
    read_only = load_catalogue(json.dumps({**DOCUMENT, "entries": DOCUMENT["entries"][:1]}).encode(), "t").unwrap()
    assert catalogue_server_args(own_cli("/py"), "/s", "/w", read_only)[-1] == "/w"


def test_an_item_tool_call_resolves_through_the_catalogue():
    call = presented_tool_call(CATALOGUE, "c", "write_note", {"path": "notes/a.md", "text": "x"})
    assert (call.seam, call.operations, call.subjects) == (
        "owned_tool",
        (Operation("file.write"),),
        ("file:notes/a.md",),
    )
    exec_call = presented_tool_call(CATALOGUE, "d", "exec", "text(1)")
    assert (exec_call.operations, exec_call.subjects) == ((), ())


def reserved_document(name: str) -> dict[str, Any]:
    entry = {"name": name, "description": "d", "performs": "file_read"}
    return {"format": "metaharness.catalogue/1", "entries": [DOCUMENT["entries"][0], entry]}


def test_an_entry_published_as_mcp_or_under_mcp__is_refused_on_codex(tmp_path: Path):
    for name in ("mcp", "mcp__files__read"):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(reserved_document(name)))
        refusal = read_codex_catalogue(str(path)).failure()
        assert refusal.code == "catalogue-name-reserved"
        assert f"`{name}`" in refusal.message and "entry 2" in refusal.message
    fine = tmp_path / "fine.json"
    fine.write_text(json.dumps(reserved_document("mcpish")))
    assert read_codex_catalogue(str(fine)).unwrap().names() == ("read_note", "mcpish")


def test_the_file_refusals_come_before_the_reserved_name(tmp_path: Path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"format": "metaharness.catalogue/1", "entries": [{"name": "mcp"}]}))
    assert read_codex_catalogue(str(path)).failure().code == "catalogue-malformed"
    assert read_codex_catalogue(str(tmp_path / "absent.json")).failure().code == "catalogue-unreadable"


def test_the_scratch_copy_is_written_and_read_back(tmp_path: Path):
    launch = type("Launch", (), {"scratch": str(tmp_path)})()
    assert place_catalogue(launch, CATALOGUE, "tools.json", proxy_started=True, probed=False).unwrap() is None
    copy = tmp_path / "catalogue.json"
    assert load_catalogue(copy.read_bytes(), "copy").unwrap() == CATALOGUE
    assert copy.stat().st_mode & 0o777 == 0o600


def responses_body(
    tools: list[dict[str, Any]] | None, additional: list[dict[str, Any]] | None = None, results: int = 0
) -> bytes:
    """A Responses body as Codex 0.171.0 sends it: top-level ``tools``, or none and an
    ``additional_tools`` item (code mode); ``results`` call/output pairs."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    ]
    if additional is not None:
        items.insert(0, {"type": "additional_tools", "role": "developer", "tools": additional})
    for i in range(results):
        items += [
            {"type": "custom_tool_call", "call_id": f"c{i}", "name": "exec", "input": "x"},
            {"type": "custom_tool_call_output", "call_id": f"c{i}", "output": "done"},
        ]
    body: dict[str, Any] = {"model": "m", "input": items, "stream": True, "instructions": "You are Codex."}
    if tools is not None:
        body["tools"] = tools
    return json.dumps(body).encode()


def completed_output(scenario: str, raw: bytes) -> tuple[bool | None, list[dict[str, Any]]]:
    """(side, the output items of ``response.completed``) of the emulator's answer."""
    exchange = answer_request(scenario, "POST", "/v1/responses", (), raw, 1)
    frames = b"".join(exchange.answer.chunks).split(b"\n\n")
    payloads = [json.loads(f.split(b"\ndata: ", 1)[1]) for f in frames if b"\ndata: " in f]
    (done,) = [p for p in payloads if p["type"] == "response.completed"]
    return exchange.side, done["response"]["output"]


WRITE_NOTE_HOST = {
    "type": "custom",
    "name": "exec",
    "description": (
        "Run JavaScript.\n### `write_note`\nWrite one note.\n\nexec tool declaration:\n```ts\n"
        "declare const tools: { write_note(args: { path: string; text: string; }): Promise<unknown>; };\n```\n"
    ),
}


def test_the_catalogue_scenario_calls_write_note_through_code_mode():
    side, output = completed_output(
        "codex-catalogue-write",
        responses_body(None, [{"type": "namespace", "name": "functions", "tools": [WRITE_NOTE_HOST]}]),
    )
    (item,) = [o for o in output if o["type"] == "custom_tool_call"]
    assert side is False and item["name"] == "exec"
    assert item["input"] == 'text(await tools.write_note({"path":"note.md","text":"written by the emulator\\n"}));\n'


def test_the_catalogue_scenario_calls_a_top_level_write_note_as_a_function():
    tool = {"type": "function", "name": "write_note", "parameters": {"type": "object"}}
    _, output = completed_output("codex-catalogue-write", responses_body([tool]))
    (item,) = [o for o in output if o["type"] == "function_call"]
    assert (item["name"], json.loads(item["arguments"])) == (
        "write_note",
        {"path": "note.md", "text": "written by the emulator\n"},
    )


def test_the_catalogue_scenario_is_done_after_a_result_and_a_side_request_without_the_entry():
    host = [{"type": "namespace", "name": "functions", "tools": [WRITE_NOTE_HOST]}]
    _, output = completed_output("codex-catalogue-write", responses_body(None, host, results=1))
    assert [part["text"] for o in output if o["type"] == "message" for part in o["content"]] == [
        "emulated work is done"
    ]
    side, output = completed_output("codex-catalogue-write", responses_body([{"type": "function", "name": "wait"}]))
    assert side is True
    assert [part["text"] for o in output if o["type"] == "message" for part in o["content"]] == ["emulated"]


def test_doctor_checks_the_app_server_flags_against_app_server_help():
    assert APP_SERVER_FLAGS == ("--strict-config", "--listen")
    exec_help = "Options:\n" + "\n".join(f"  {flag}" for flag in SENT_FLAGS)
    report = codex_doctor_report("/b/codex", "0.171.0", exec_help, "Options:\n  --strict-config\n  --stdio\n")
    assert report.lines[1:] == ("codex: the adapter sends app-server --listen and the binary does not declare it",)
    assert report.exit_code == 1
