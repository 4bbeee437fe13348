"""Any ``tools/call`` arguments, and any line, give a response or silence, never a crash
(docs/hermetic.md#calling-a-catalogue-entry, #mcp-wire): each request line is answered by one JSON-RPC object echoing
its id; a call is a result (``isError`` false or true) or a JSON-RPC error, and what passes the checks is performed
through the loop's confined tools in a real workspace."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.catalogue import load_catalogue
from metaharness.pure.loop.catalogue import publish
from metaharness.pure.mcp import (
    CatalogueSurface,
    Note,
    OwnedSurface,
    Perform,
    Quiet,
    ResponseLine,
    Server,
    performed_answer,
    read_line,
)
from metaharness.shell.loop.cancel import CancelToken
from metaharness.shell.loop.tools import Workspace
from metaharness.shell.mcp_server import perform_entry

CATALOGUE = load_catalogue(
    b"""format: metaharness.catalogue/1
entries:
  - {name: read_note, description: d, performs: file_read, input: {path: {type: string, required: true}, limit: {type: integer}}}
  - {name: list, description: d, performs: dir_list, input: {path: {type: string}}}
  - {name: grep, description: d, performs: search, input: {pattern: {type: string, required: true}, path: {type: string}, regex: {type: boolean}}}
  - {name: glob, description: d, performs: find, input: {glob: {type: string, required: true}, max_results: {type: integer}}}
  - {name: save, description: d, performs: file_write, input: {path: {type: string, required: true}, text: {type: string, required: true}}}
  - {name: patch, description: d, performs: file_edit, input: {path: {type: string, required: true}, old: {type: string}, new: {type: string}}}
  - {name: build, description: d, performs: run, input: {argv: {type: array}}}
""",
    "tools.yaml",
).unwrap()
PROGRAMS = ("true",)
SERVERS = (
    (Server(CatalogueSurface(CATALOGUE, True), "0"), publish(True, ())),
    (Server(CatalogueSurface(CATALOGUE, False), "0"), publish(False, ())),
    (Server(OwnedSurface(publish(True, PROGRAMS)), "0"), publish(True, PROGRAMS)),
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["notes/a.md", ".", "..", "/", "notes", "a", "*.md", "x\x00y", ".git/config", "true"])
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "path",
                    "limit",
                    "pattern",
                    "regex",
                    "glob",
                    "text",
                    "old",
                    "new",
                    "argv",
                    "name",
                    "arguments",
                    "query",
                    "effect",
                    "max_results",
                    "offset",
                    "x",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=12,
)
NAMES = st.sampled_from(
    [
        "read_note",
        "list",
        "grep",
        "glob",
        "save",
        "patch",
        "build",
        "nope",
        "tool_search",
        "tool_describe",
        "tool_invoke",
        "file_read",
        "run",
    ]
)
INVOKE = st.builds(
    lambda name, arguments: {"name": name, "arguments": arguments},
    st.sampled_from(["file_read", "dir_list", "search", "find", "file_write", "file_edit", "run", "nope"]),
    JSON,
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("work")
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("alpha\nbeta\n")
    return Workspace(str(root.resolve()), (), CancelToken(None, time.monotonic()))


def answered(server: Server, publication: Any, workspace: Workspace, line: bytes) -> ResponseLine | Note | Quiet:
    step = read_line(server, line)
    if isinstance(step, Perform):
        return performed_answer(step.request_id, perform_entry(workspace, publication, step.entry, step.arguments))
    return step


@settings(max_examples=400, deadline=None)
@given(st.integers(0, len(SERVERS) - 1), NAMES, st.one_of(JSON, INVOKE), st.booleans())
def test_any_call_arguments_give_a_result_never_a_crash(
    workspace: Workspace, server: int, name: str, arguments: Any, absent: bool
) -> None:
    params: dict[str, Any] = {"name": name} if absent else {"name": name, "arguments": arguments}
    line = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).encode()
    answer = answered(*SERVERS[server], workspace, line)
    assert isinstance(answer, ResponseLine) and answer.line.endswith(b"\n") and answer.line.count(b"\n") == 1
    response = json.loads(answer.line)
    assert response["jsonrpc"] == "2.0" and response["id"] == 7
    result = response["result"]
    assert set(result) == {"content", "isError"} and isinstance(result["isError"], bool)
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text" and result["content"][0]["text"]
    if server == 1 and name in ("save", "patch"):
        assert result["isError"] is True


MESSAGE = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": st.none() | st.integers() | st.text(max_size=4) | st.lists(st.integers(), max_size=2),
        "method": st.sampled_from(["initialize", "ping", "tools/list", "tools/call", "notifications/x", "x"]) | JSON,
        "params": JSON,
    },
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=60), st.builds(lambda value: json.dumps(value).encode(), st.one_of(JSON, MESSAGE))))
def test_any_line_is_answered_once_noted_or_silent(workspace: Workspace, line: bytes) -> None:
    for server, publication in SERVERS:
        answer = answered(server, publication, workspace, line)
        if isinstance(answer, ResponseLine):
            response = json.loads(answer.line)
            assert response["jsonrpc"] == "2.0" and "id" in response
            assert ("result" in response) != ("error" in response)
