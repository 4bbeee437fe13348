"""Resolving a codex call to operations and subjects (docs/adapters/codex.md#rendering).

Resolution is the inverse of the published rendering (``metaharness.pure.capabilities``): ``Bash`` is
``shell``, ``apply_patch`` is ``file.edit`` or ``file.write`` by its patch headers, ``mcp__<s>__<t>``
is ``mcp.call``; any other name resolves to no operation.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from returns.result import Success

from metaharness.pure.codex.patch import parse_patch
from metaharness.pure.frames import Operation
from metaharness.pure.program_subjects import command_subjects

HOOK_NAMES: Mapping[str, str] = MappingProxyType(
    {"exec_command": "Bash", "spawn_agent": "collaborationspawn_agent", "wait_agent": "collaborationwait_agent"}
)
"""The tools Codex 0.171.0 offers the model under one name and its hook under another (a tool of the
``collaboration`` namespace reaches the hook as the namespace and the name run together)."""

CODEX_NO_OPERATION: Mapping[str, str] = MappingProxyType(
    {
        "exec": "code mode's host: it runs a script whose nested tool calls reach the hook themselves",
        "wait": "code mode: waits for a running script",
        "write_stdin": "writes to a command session exec_command already started",
        "request_user_input": "asks the user a question",
        "request_user_input_async": "asks the user a question without waiting",
        "send_message_to_user_async": "messages the user",
        "sleep": "waits",
        "clock__curr_time": "reads the clock",
        "create_goal": "records the session's goal",
        "get_goal": "reads the session's goal",
        "update_goal": "updates the session's goal",
        "spawn_agent": "starts a sub-agent in its own thread and rollout; its own calls reach the hook",
        "followup_task": "gives a sub-agent more work",
        "send_message": "messages a sub-agent",
        "wait_agent": "waits for a sub-agent",
        "interrupt_agent": "interrupts a sub-agent",
        "list_agents": "lists the sub-agents",
        "list_mcp_resources": "lists MCP resources (no MCP server is configured)",
        "list_mcp_resource_templates": "lists MCP resource templates (no MCP server is configured)",
        "read_mcp_resource": "reads an MCP resource (no MCP server is configured)",
        "view_image": "attaches a local image file to the conversation",
    }
)
"""Each tool the pinned Codex offers the model (top level and nested in code mode's ``exec``) that no
operation renders to, and what it does; a frame never admits one (docs/vendor-facts.md)."""


def shell_subjects(command: str) -> tuple[str, ...]:
    """Every program a shell command would run (docs/decisions.md#program-subjects), shared with claude."""
    return command_subjects(command)


def patch_text(input: Any) -> str | None:
    """The patch of an ``apply_patch`` call: the hook's ``{command}`` or the record's raw string."""
    if isinstance(input, str):
        return input
    command = input.get("command") if isinstance(input, dict) else None
    return command if isinstance(command, str) else None


def patch_resolution(patch: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``file.edit`` iff every hunk is an update without a move, else ``file.write``; subjects
    ``file:<path>`` for every hunk path and move target, in order, as the pinned Codex parses the patch
    (``metaharness.pure.codex.patch``); a patch it would not apply has no subject."""
    hunks = parse_patch(patch).value_or(())
    edit = bool(hunks) and all(hunk.kind == "update" and hunk.move_to is None for hunk in hunks)
    paths = (path for hunk in hunks for path in (hunk.path, hunk.move_to) if path is not None)
    return ("file.edit",) if edit else ("file.write",), tuple(dict.fromkeys(f"file:{path}" for path in paths))


def unreadable_patch(name: str, input: Any) -> str | None:
    """Why an ``apply_patch`` call is denied by ``adapter`` before any frame sees it: its input holds no
    patch, or a patch the pinned Codex would not parse; ``None`` for every other call."""
    if name != "apply_patch":
        return None
    patch = patch_text(input)
    if patch is None:
        return "this apply_patch call carries no patch text, so metaharness cannot tell what it would touch"
    parsed = parse_patch(patch)
    if isinstance(parsed, Success):
        return None
    return (
        f"this patch cannot be read the way Codex reads it ({parsed.failure()}), "
        "so metaharness cannot tell what it would touch"
    )


def resolve_call(name: str, input: Any) -> tuple[tuple[Operation, ...], tuple[str, ...]]:
    """The operations and subjects of a codex call as presented (tool name and input)."""
    if name == "Bash":
        command = input.get("command") if isinstance(input, dict) else None
        return (Operation("shell"),), shell_subjects(command) if isinstance(command, str) else ()
    if name == "apply_patch":
        patch = patch_text(input)
        names, subjects = patch_resolution(patch) if patch is not None else (("file.write",), ())
        return tuple(Operation(op) for op in names), subjects
    if name.startswith("mcp__"):
        server, _, tool = name[len("mcp__") :].partition("__")
        if server and tool:
            return (Operation("mcp.call", server, tool),), ()
    return (), ()


def operation_names(operations: tuple[Operation, ...]) -> tuple[str, ...]:
    """The ``tool.requested.operations`` strings of resolved operations (docs/events.md#the-twenty-events)."""
    return tuple(dict.fromkeys(operation.op for operation in operations))
