"""The tools each pinned CLI actually offers its model, read from the requests it sends to
``b10x-emulator``, against the adapters' tables: every offered tool has a rendering or an explicit
"no operation" entry, every rendering names a tool the pin offers, and no entry is stale
(docs/vendor-facts.md).

Claude Code 2.1.332 sends part of its tools as names only ("deferred tools", loaded through
``ToolSearch``), listed in one paragraph beside the tool list; they count as offered. Codex 0.171.0
nests most of its tools inside code mode's ``exec``; the emulator's request reader names them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.emulator import running_emulator
from vendor_cli import pinned_cli

from metaharness.pure.adapter import MCP_CALL_TEMPLATE
from metaharness.pure.claude.rendering import CLAUDE_NO_OPERATION
from metaharness.pure.claude.vendor import RENDERING as CLAUDE_RENDERING
from metaharness.pure.codex.rendering import CODEX_NO_OPERATION, HOOK_NAMES
from metaharness.pure.codex.vendor import RENDERING as CODEX_RENDERING
from metaharness.pure.emulator.request import read_request, wire_of
from metaharness.pure.gemini.adapter import RENDERING as GEMINI_RENDERING
from metaharness.pure.gemini.rendering import GEMINI_NO_OPERATION

METAHARNESS = str(Path(sys.executable).with_name("metaharness"))
DEFERRED = re.compile(r"deferred tools are now available via ToolSearch.*?:\n((?:[A-Za-z0-9_]+\n)+)", re.DOTALL)
CATALOGUE = {
    "format": "metaharness.catalogue/1",
    "entries": [{"name": "write_note", "description": "Write one note.", "performs": "file_write",
                 "input": {"path": {"type": "string", "required": True}}}],
}  # fmt: skip


def offered_tools(record: Path) -> set[str]:
    """Every tool named in the recorded requests: the tool list, code mode's nested tools, and the
    deferred tools a Messages request names beside its list."""
    names: set[str] = set()
    for line in record.read_text().splitlines():
        request = json.loads(line)
        if not isinstance(request.get("body"), dict):
            continue
        view = read_request(wire_of(request["path"]), request["body"])
        for tool in view.tools:
            names.add(tool.name)
            names.update(tool.nested)
        for listed in DEFERRED.findall(json.dumps(request["body"]).encode().decode("unicode_escape")):
            names.update(listed.split())
    return names


def recorded_run(tmp_path: Path, scenario: str, kind: str, *extra: str) -> set[str]:
    record = tmp_path / f"{kind}-{scenario}.jsonl"
    work = tmp_path / f"work-{scenario}"
    work.mkdir()
    with running_emulator("--scenario", scenario, "--record", str(record), "--record-bodies") as (base_url, _):
        argv = [METAHARNESS, "run", kind, "-p", "say hello", "--credentials", "none", "--model-endpoint",
                base_url.removesuffix("/v1"), "--cwd", str(work), "--decisions", "observe", *extra]  # fmt: skip
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr.decode()
    offered = offered_tools(record)
    assert offered, "the CLI sent no tool list"
    return offered


def rendered_tools(rendering: dict[str, str] | object) -> set[str]:
    assert isinstance(rendering, dict)
    return {tool for tool in rendering.values() if tool != MCP_CALL_TEMPLATE}


@pytest.mark.skipif(pinned_cli("claude") is None, reason="the pinned Claude Code is not installed")
def test_every_tool_claude_offers_is_rendered_or_named_as_no_operation(tmp_path: Path) -> None:
    offered = recorded_run(tmp_path, "text", "claude")
    rendered = rendered_tools(dict(CLAUDE_RENDERING))
    assert offered - rendered - set(CLAUDE_NO_OPERATION) == set()
    assert rendered - offered == set(), "a rendering names a tool the pinned binary does not offer"
    assert set(CLAUDE_NO_OPERATION) - offered == set(), "a no-operation entry names a tool the pin does not offer"
    assert {"Agent", "ToolSearch", "WebFetch"} <= offered and not {"Task", "Glob", "Grep", "TodoWrite"} & offered


@pytest.mark.skipif(pinned_cli("codex") is None, reason="the pinned Codex CLI is not installed")
def test_every_tool_codex_offers_is_rendered_or_named_as_no_operation(tmp_path: Path) -> None:
    source = tmp_path / "tools.json"
    source.write_text(json.dumps(CATALOGUE))
    offered = recorded_run(tmp_path, "text", "codex")
    catalogue_run = recorded_run(tmp_path, "codex-catalogue-write", "codex", "--tool-surface", "owned",
                                 "--catalogue", str(source))  # fmt: skip
    offered |= catalogue_run - {"write_note"}
    as_hook_sees = {HOOK_NAMES.get(tool, tool) for tool in offered}
    rendered = rendered_tools(dict(CODEX_RENDERING))
    assert {HOOK_NAMES.get(tool, tool) for tool in offered - set(CODEX_NO_OPERATION)} - rendered == set()
    assert rendered - as_hook_sees == set(), "a rendering names a tool the pinned binary does not offer"
    assert set(CODEX_NO_OPERATION) - offered == set(), "a no-operation entry names a tool the pin does not offer"


@pytest.mark.skipif(pinned_cli("gemini") is None, reason="the pinned Gemini CLI is not installed")
def test_every_tool_gemini_offers_is_rendered_or_named_as_no_operation(tmp_path: Path) -> None:
    """The governed launch's own tool list (``--approval-mode yolo``, the scratch settings), as the pin sends it
    on the Generative Language wire."""
    offered = recorded_run(tmp_path, "text", "gemini")
    rendered = rendered_tools(dict(GEMINI_RENDERING))
    assert offered - rendered - set(GEMINI_NO_OPERATION) == set()
    assert rendered - offered == set(), "a rendering names a tool the pinned binary does not offer"
    assert set(GEMINI_NO_OPERATION) - offered == set(), "a no-operation entry names a tool the pin does not offer"
    assert {"write_file", "run_shell_command", "replace"} <= offered
