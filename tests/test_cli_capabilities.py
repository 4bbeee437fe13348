"""``metaharness capabilities <KIND> [--render]``: the exact bytes of docs/adapters/common.md#descriptor with the values
of docs/adapters/b10x.md#rendering, #capabilities-and-doctor (b10x) and docs/adapters/claude.md;
docs/adapters/codex.md (claude, codex)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REFUSED = {"refused": "UNSUPPORTED_CONTROL"}
COMMANDS = {
    "tool.decide": "honoured",
    "interrupt": "honoured",
    "halt": "honoured",
    "frame.set": REFUSED,
    "message.inject": REFUSED,
    "steer": REFUSED,
    "permission.set": REFUSED,
}
NO_TOOL: dict[str, None] = {
    op: None
    for op in ("file.read", "file.write", "file.edit", "dir.list", "search", "shell", "web.read",
               "skill.load", "subagent.spawn", "task.todo", "mcp.call")
}
SPEC: dict[str, dict[str, Any]] = {
    "claude": {
        "adapter": {"id": "claude", "class": "harness"},
        "versions_pinned": ["2.1.332"],
        "tiers": {"registration": "delivered", "call": "delivered", "turn": "unverified", "kill": "delivered"},
        "commands": COMMANDS,
        "decision_modes": {"frame": "delivered", "ask": "delivered", "observe": "delivered"},
        "rendering": {
            "file.read": "Read", "file.write": "Write", "file.edit": "Edit", "dir.list": None,
            "search": None, "shell": "Bash", "web.read": "WebFetch", "skill.load": "Skill",
            "subagent.spawn": "Agent", "task.todo": None, "mcp.call": "mcp__<server>__<tool>",
        },
        "mcp_servers": [],
    },
    "codex": {
        "adapter": {"id": "codex", "class": "harness"},
        "versions_pinned": ["0.171.0"],
        "tiers": {"registration": "unverified", "call": "delivered", "turn": "unverified", "kill": "delivered"},
        "commands": COMMANDS,
        "decision_modes": {"frame": "delivered", "ask": "delivered", "observe": "delivered"},
        "rendering": {
            **NO_TOOL, "shell": "Bash", "file.write": "apply_patch", "file.edit": "apply_patch",
            "mcp.call": "mcp__<server>__<tool>",
        },
        "mcp_servers": [],
    },
    "b10x": {
        "adapter": {"id": "b10x", "class": "direct_provider"},
        "versions_pinned": ["0.22.0"],
        "tiers": {"registration": "unverified", "call": "unverified", "turn": "unverified", "kill": "unverified"},
        "commands": COMMANDS,
        "decision_modes": {"frame": "delivered", "ask": "unverified", "observe": "delivered"},
        "rendering": {
            **NO_TOOL, "file.read": "file_read", "file.write": "file_write", "file.edit": "file_edit",
            "dir.list": "dir_list", "search": "search", "shell": "run",
        },
        "mcp_servers": [],
    },
}


def capabilities(*args: str) -> subprocess.CompletedProcess[bytes]:
    script = Path(sys.executable).with_name("metaharness")
    return subprocess.run([str(script), "capabilities", *args], capture_output=True, check=False, timeout=60)


def expected_bytes(kind: str) -> bytes:
    """docs/adapters/common.md#descriptor: top-level keys in order, adapter id before class, the name-keyed
    maps sorted."""
    value = dict(SPEC[kind])
    for key in ("tiers", "commands", "decision_modes", "rendering"):
        value[key] = dict(sorted(value[key].items()))
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


@pytest.mark.parametrize("kind", ["claude", "codex", "b10x"])
def test_descriptor_is_the_exact_json_dumps_bytes(kind: str) -> None:
    result = capabilities(kind)
    assert result.returncode == 0
    assert result.stderr == b""
    assert result.stdout == expected_bytes(kind)


def test_b10x_render_prints_one_line_per_operation_in_vocabulary_order() -> None:
    result = capabilities("b10x", "--render")
    assert result.returncode == 0
    assert result.stdout.decode().splitlines() == [
        "file.read        -> file_read",
        "file.write       -> file_write",
        "file.edit        -> file_edit",
        "dir.list         -> dir_list",
        "search           -> search",
        "shell            -> run",
        "web.read         -> (no vendor tool)",
        "skill.load       -> (no vendor tool)",
        "subagent.spawn   -> (no vendor tool)",
        "task.todo        -> (no vendor tool)",
        "mcp.call         -> (no vendor tool)",
    ]


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_vendor_render_agrees_with_the_descriptor(kind: str) -> None:
    lines = capabilities(kind, "--render").stdout.decode().splitlines()
    rendering = SPEC[kind]["rendering"]
    assert [line.split(" -> ")[0].rstrip() for line in lines] == list(NO_TOOL)
    for line in lines:
        op, tool = line.split(" -> ")
        assert tool == (rendering[op.rstrip()] or "(no vendor tool)")
        assert len(op) == 16
