"""``metaharness mcp-serve`` as a subprocess (docs/hermetic.md#mcp-serve, docs/hermetic.md#calling-a-catalogue-entry,
#mcp-serve): driven by the official MCP Python SDK over stdio, and by raw JSON-RPC lines for the wire's errors and
the startup refusals."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

VERSION = importlib.metadata.version("metaharness")
SERVE = [sys.executable, "-m", "metaharness.shell", "mcp-serve"]
CATALOGUE = """format: metaharness.catalogue/1
entries:
  - name: read_note
    description: Read one note under notes/.
    performs: file_read
    input:
      path: {type: string, required: true, description: Path relative to the workspace.}
      limit: {type: integer}
  - name: find_notes
    description: Find notes by a glob.
    performs: find
    input:
      glob: {type: string, required: true}
  - name: save_note
    description: Save a note.
    performs: file_write
    input:
      path: {type: string, required: true}
      text: {type: string, required: true}
  - name: build
    description: Run the build.
    performs: run
    input:
      argv: {type: array, required: true}
  - name: fetch
    description: Fetch a page.
    performs: web_fetch
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("first note\nsecond line\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    (root / "notes" / "escape.md").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "tools.yaml").write_text(CATALOGUE)
    return root


def call_all(args: list[str], calls: list[tuple[str, dict[str, Any] | None]]) -> tuple[Any, Any, list[Any]]:
    """One SDK session against the server: initialize, tools/list, then each tools/call in order."""

    async def session() -> tuple[Any, Any, list[Any]]:
        params = StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], *args])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            initialized = await client.initialize()
            listed = await client.list_tools()
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            return initialized, listed, results

    return anyio.run(session)


def texts(results: list[Any]) -> list[tuple[bool, str]]:
    return [(result.is_error, result.content[0].text) for result in results]


def test_a_catalogue_served_to_the_sdk_client(workspace: Path) -> None:
    initialized, listed, results = call_all(
        ["--workspace", str(workspace), "--catalogue", str(workspace.parent / "tools.yaml")],
        [
            ("read_note", {"path": "notes/a.md", "limit": 1}),
            ("read_note", {"path": "notes/a.md", "limit": None}),
            ("read_note", {"limit": 2}),
            ("read_note", {"path": None}),
            ("read_note", {"path": "notes/a.md", "offset": 2}),
            ("read_note", {"path": "notes/a.md", "limit": "two"}),
            ("read_note", {"path": "../secret.txt"}),
            ("read_note", {"path": "notes/escape.md"}),
            ("find_notes", {"glob": "*.md"}),
            ("save_note", {"path": "notes/b.md", "text": "new"}),
            ("build", {"argv": ["true"]}),
            ("fetch", None),
            ("file_read", {"path": "notes/a.md"}),
        ],
    )
    assert initialized.server_info.name == "metaharness"
    assert [tool.name for tool in listed.tools] == ["read_note", "find_notes", "save_note", "build", "fetch"]
    assert listed.tools[0].input_schema == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace."},
            "limit": {"type": "integer"},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    assert listed.tools[0].description == "Read one note under notes/."
    answers = texts(results)
    assert answers[0][0] is False and json.loads(answers[0][1]) == {
        "path": "notes/a.md",
        "lines": {"first": 1, "last": 1, "total": 2},
        "truncated": True,
        "text": "     1\tfirst note\n",
    }
    assert answers[0][1].startswith('{\n  "path": "notes/a.md",\n  "lines": {\n    "first": 1,')
    assert answers[1][0] is False and json.loads(answers[1][1])["lines"]["last"] == 2
    assert answers[2:6] == [
        (True, "`read_note` requires `path`"),
        (True, "`read_note` requires `path`"),
        (True, "`read_note` has no input field `offset`"),
        (True, "`file_read` arguments: `limit` must be an integer of at least 1"),
    ]
    assert answers[6] == (True, "`../secret.txt` contains `..`; name paths from the workspace root")
    assert answers[7] == (True, "`notes/escape.md` is outside the workspace")
    assert answers[8][0] is False and json.loads(answers[8][1])["paths"] == ["notes/a.md"]
    assert answers[9] == (True, "`save_note` performs file_write, which needs a writable workspace; nothing was done")
    assert answers[10] == (True, "`build` performs `run`, which this build does not perform; nothing was done")
    assert answers[11] == (True, "`fetch` performs `web_fetch`, which this build does not perform; nothing was done")
    assert answers[12] == (
        True,
        "`file_read` is not a tool this run has; it has: read_note, find_notes, save_note, build, fetch",
    )
    assert not (workspace / "notes" / "b.md").exists()


def test_a_writable_catalogue_server_writes_in_its_workspace(workspace: Path) -> None:
    _initialized, _listed, results = call_all(
        ["--workspace", str(workspace), "--writable", "--catalogue", str(workspace.parent / "tools.yaml")],
        [
            ("save_note", {"path": "notes/b.md", "text": "saved\n"}),
            ("save_note", {"path": ".git/config", "text": "x"}),
            ("save_note", {"path": "notes/escape.md", "text": "x"}),
        ],
    )
    answers = texts(results)
    assert answers[0] == (False, '{\n  "path": "notes/b.md",\n  "bytes": 6\n}')
    assert (workspace / "notes" / "b.md").read_text() == "saved\n"
    assert answers[1] == (True, "`.git/config` is outside this run's write scope (`.git/**`: denied)")
    assert answers[2] == (True, "`notes/escape.md` passes through a symbolic link")
    assert (workspace.parent / "secret.txt").read_text() == "outside\n"


def test_the_owned_surface_served_to_the_sdk_client(workspace: Path) -> None:
    _initialized, listed, results = call_all(
        ["--workspace", str(workspace)],
        [
            ("tool_search", {}),
            ("tool_search", {"effect": "write"}),
            ("tool_search", {"query": "GLOB"}),
            ("tool_describe", {"name": "find"}),
            ("tool_describe", {"name": "file_write"}),
            ("tool_invoke", {"name": "file_read", "arguments": {"path": "notes/a.md"}}),
            ("tool_invoke", {"name": "run", "arguments": {"argv": ["true"]}}),
            ("tool_invoke", {"name": "file_read"}),
            ("tool_search", {"effect": "delete"}),
            ("read_note", {}),
        ],
    )
    assert [tool.name for tool in listed.tools] == ["tool_search", "tool_describe", "tool_invoke"]
    assert all(tool.input_schema["additionalProperties"] is False for tool in listed.tools)
    assert listed.tools[2].input_schema["required"] == ["name", "arguments"]
    answers = texts(results)
    everything = json.loads(answers[0][1])
    assert [tool["name"] for tool in everything["tools"]] == ["file_read", "dir_list", "search", "find"]
    assert everything["withheld"] == [
        {"tool": "file_write", "reason": "the workspace is not writable"},
        {"tool": "file_edit", "reason": "the workspace is not writable"},
        {"tool": "run", "reason": "no program was allowed; pass --allow-program"},
    ]
    writes = json.loads(answers[1][1])
    assert writes["tools"] == [] and [held["tool"] for held in writes["withheld"]] == ["file_write", "file_edit"]
    assert [tool["name"] for tool in json.loads(answers[2][1])["tools"]] == ["find"]
    described = json.loads(answers[3][1])
    assert described["name"] == "find" and described["operation"] == "search"
    assert described["input_schema"]["required"] == ["glob"]
    unknown = "it has: file_read, dir_list, search, find"
    assert answers[4] == (True, f"`file_write` is not a tool this run has; {unknown}")
    assert answers[5][0] is False and json.loads(answers[5][1])["text"] == "     1\tfirst note\n     2\tsecond line\n"
    assert answers[6] == (True, f"`run` is not a tool this run has; {unknown}")
    assert answers[7] == (True, "`tool_invoke` requires `arguments`")
    assert answers[8] == (True, "`tool_search`: `effect` must be one of read, write, run")
    assert answers[9] == (
        True,
        "`read_note` is not a tool this run has; it has: tool_search, tool_describe, tool_invoke",
    )


def test_the_owned_surface_runs_an_allowed_program_and_writes(workspace: Path) -> None:
    _initialized, _listed, results = call_all(
        ["--workspace", str(workspace), "--writable", "--allow-program", "echo"],
        [
            ("tool_describe", {"name": "run"}),
            ("tool_invoke", {"name": "run", "arguments": {"argv": ["echo", "hi"]}}),
            ("tool_invoke", {"name": "run", "arguments": {"argv": ["sh", "-c", "true"]}}),
            ("tool_invoke", {"name": "file_edit", "arguments": {"path": "notes/a.md", "old": "first", "new": "1st"}}),
        ],
    )
    answers = texts(results)
    assert json.loads(answers[0][1])["operation"] == "shell"
    ran = json.loads(answers[1][1])
    assert answers[1][0] is False and ran["stdout"] == "hi\n" and ran["exit"] == 0
    assert answers[2] == (True, "`sh` is not a program this run may start; allowed: `echo`")
    assert answers[3][0] is False
    assert (workspace / "notes" / "a.md").read_text() == "1st note\nsecond line\n"


# Raw JSON-RPC lines


def serve_lines(args: list[str], lines: list[str | bytes]) -> tuple[int, list[Any], str]:
    data = b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines)
    done = subprocess.run([*SERVE, *args], input=data, capture_output=True, timeout=60, check=False)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr.decode()


def test_the_spec_example_exchange_byte_for_byte(workspace: Path) -> None:
    lines = [
        (
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
            '"clientInfo":{"name":"claude-code","version":"2.1.332"}}}'
        ),
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_note","arguments":{"path":null}}}',
    ]
    data = "".join(line + "\n" for line in lines).encode()
    args = ["--workspace", str(workspace), "--catalogue", str(workspace.parent / "tools.yaml")]
    done = subprocess.run([*SERVE, *args], input=data, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0
    assert done.stdout == (
        b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},'
        b'"serverInfo":{"name":"metaharness","version":"' + VERSION.encode() + b'"}}}\n'
        b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"`read_note` requires `path`"}],'
        b'"isError":true}}\n'
    )


def test_the_wire_errors_and_silences(workspace: Path) -> None:
    code, answers, stderr = serve_lines(
        ["--workspace", str(workspace)],
        [
            "not json",
            b"\xff\xfe",
            '{"jsonrpc":"2.0","method":"notifications/initialized"}',
            '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}',
            '{"jsonrpc":"2.0","method":"tools/list"}',
            '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
            "7",
            '{"jsonrpc":"1.0","id":"a","method":"ping"}',
            '{"jsonrpc":"2.0","id":"b"}',
            '{"jsonrpc":"2.0","id":"c","method":5}',
            '{"jsonrpc":"2.0","id":"d","method":"resources/list"}',
            '{"jsonrpc":"2.0","id":"e","method":"tools/call","params":[1]}',
            '{"jsonrpc":"2.0","id":"f","method":"tools/call","params":{"name":3}}',
            '{"jsonrpc":"2.0","id":"g","method":"tools/call","params":{"name":"tool_search","arguments":[]}}',
            '{"jsonrpc":"2.0","id":"h","method":"ping"}',
            '{"jsonrpc":"2.0","id":null,"method":"initialize"}',
            '{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"cursor":"x"}}',
        ],
    )
    assert code == 0
    assert stderr.count("skipped a line that is not JSON") == 2
    assert [answer["id"] for answer in answers] == [None, None, "a", "b", "c", "d", "e", "f", "g", "h", None, 9]
    assert [answer.get("error", {}).get("code") for answer in answers[:8]] == [
        -32600,
        -32600,
        -32600,
        -32600,
        -32600,
        -32601,
        -32602,
        -32602,
    ]
    assert answers[5]["error"]["message"] == "method not found: resources/list"
    assert answers[8]["result"] == {
        "content": [{"type": "text", "text": "`tool_search`: arguments must be an object"}],
        "isError": True,
    }
    assert answers[9]["result"] == {}
    assert answers[10]["result"]["protocolVersion"] == "2025-06-18"
    assert [tool["name"] for tool in answers[11]["result"]["tools"]] == ["tool_search", "tool_describe", "tool_invoke"]
    assert "nextCursor" not in answers[11]["result"]


def test_end_of_file_ends_the_server_at_once() -> None:
    assert serve_lines([], []) == (0, [], "")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--allow-program", "cargo"], "allow-program-needs-writable"),
        (["--writable", "--allow-program", "cargo", "--catalogue", "tools.yaml"], "catalogue-with-allow-program"),
        (["--catalogue", "tools.yaml", "--allow-program", "cargo"], "catalogue-with-allow-program"),
        (["--catalogue", "absent.yaml"], "catalogue-unreadable"),
        (["--catalogue", "."], "catalogue-unreadable"),
        (["--catalogue", "latin.yaml"], "catalogue-unreadable"),
        (["--catalogue", "frame.yaml"], "catalogue-not-tool-contract"),
        (["--catalogue", "twice.yaml"], "catalogue-malformed"),
    ],
)
def test_startup_refusals_exit_2_with_nothing_on_stdout(tmp_path: Path, args: list[str], code: str) -> None:
    (tmp_path / "tools.yaml").write_text(CATALOGUE)
    (tmp_path / "latin.yaml").write_bytes(b"format: metaharness.catalogue/1 \xe9\n")
    (tmp_path / "frame.yaml").write_text("format: metaharness.frame/1\n")
    (tmp_path / "twice.yaml").write_text(CATALOGUE + "  - {name: read_note, description: again, performs: search}\n")
    done = subprocess.run(
        [*SERVE, *args],
        input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith(f"metaharness: {code}: ")
    assert done.stderr.decode().count("\n") == 1


def test_a_served_catalogue_names_reserved_by_codex_are_still_served(tmp_path: Path) -> None:
    (tmp_path / "tools.yaml").write_text(
        "format: metaharness.catalogue/1\nentries:\n  - {name: mcp__x, description: d, performs: dir_list}\n"
    )
    code, answers, _stderr = serve_lines(
        ["--workspace", str(tmp_path), "--catalogue", str(tmp_path / "tools.yaml")],
        ['{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp__x"}}'],
    )
    assert code == 0 and answers[0]["result"]["isError"] is False
    assert json.loads(answers[0]["result"]["content"][0]["text"])["entries"][0]["name"] == "tools.yaml"


def test_a_server_fault_is_answered_32603_and_serving_goes_on(tmp_path: Path) -> None:
    # The loop's dir_list cannot write a file name that is not UTF-8 into its JSON reply.
    (tmp_path / os.fsdecode(b"\xff.txt")).touch()
    code, answers, _stderr = serve_lines(
        ["--workspace", str(tmp_path)],
        [
            (
                '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_invoke",'
                '"arguments":{"name":"dir_list","arguments":{}}}}'
            ),
            '{"jsonrpc":"2.0","id":2,"method":"ping"}',
        ],
    )
    assert code == 0
    assert answers[0]["id"] == 1 and answers[0]["error"]["code"] == -32603
    assert answers[0]["error"]["message"].startswith("server fault: ")
    assert answers[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_an_allowed_program_is_never_found_in_a_folder_the_tools_write(workspace: Path) -> None:
    """``PATH`` naming the workspace's own ``bin`` or ``.`` (the server's cwd is the workspace): a ``tool`` the
    tools planted there is not the allowed program, so it is not found, and never runs."""
    marker = workspace.parent / "ran"
    for folder in (workspace / "bin", workspace):
        folder.mkdir(exist_ok=True)
        (folder / "tool").write_text(f"#!/bin/sh\necho planted >> {marker}\n")
        (folder / "tool").chmod(0o755)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "tool_invoke", "arguments": {"name": "run", "arguments": {"argv": ["tool"]}}}}  # fmt: skip
    for path in (f"{workspace}/bin:/usr/bin:/bin", ".:/usr/bin:/bin", ":/usr/bin:/bin"):
        done = subprocess.run(
            [*SERVE, "--workspace", ".", "--writable", "--allow-program", "tool"], input=json.dumps(request).encode() + b"\n",
            capture_output=True, timeout=60, check=False, cwd=workspace, env={**os.environ, "PATH": path},
        )  # fmt: skip
        answer = json.loads(done.stdout)
        assert answer["result"]["isError"] is True, answer
        assert answer["result"]["content"][0]["text"] == "`tool` was not found on PATH"
    assert not marker.exists()
