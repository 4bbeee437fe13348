"""Claude Code's rendering read backwards: a call's operations and subjects (docs/adapters/claude.md#rendering,
"Owned surface and --catalogue"; docs/decisions.md#operations).

Resolution is the inverse of the capabilities table; ``mcp__<server>__<tool>`` resolves to
``mcp.call{server,tool}``; any other name maps to no operation. Subjects are spelt as the call's own
arguments spell them, with only a ``<cwd>/`` prefix removed. On a catalogue run a
``mcp__metaharness__<name>`` call never resolves to ``mcp.call``: the prefix is stripped and the
catalogue gives operation and subjects; any other tool has no operation.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from metaharness.pure.admission import plain_operations
from metaharness.pure.catalogue import Catalogue, resolve_catalogue_call
from metaharness.pure.claude.vendor import RENDERING as CLAUDE_RENDERING
from metaharness.pure.frames import MCP_CALL, Operation
from metaharness.pure.program_subjects import command_subjects
from metaharness.pure.subjects import spelled_file_subjects

_FILE_TOOLS = frozenset({"Read", "Write", "Edit"})


_PLAIN_OPERATIONS: Mapping[str, tuple[Operation, ...]] = MappingProxyType(
    {tool: plain_operations(CLAUDE_RENDERING, tool) for tool in CLAUDE_RENDERING.values()}
)
"""Each tool the rendering names, with its operations other than ``mcp.call``; any other tool has none."""


def claude_operations(tool: str) -> tuple[Operation, ...]:
    """The operations whose Claude Code rendering is ``tool``, in vocabulary order (docs/adapters/claude.md)."""
    if tool.startswith("mcp__"):
        server, separator, name = tool[len("mcp__") :].partition("__")
        return (Operation(MCP_CALL, server, name),) if separator and server and name else ()
    return _PLAIN_OPERATIONS.get(tool, ())


def claude_subjects(tool: str, call_input: Any, cwd: str | None) -> tuple[str, ...]:
    """The subjects of a Claude Code call (docs/adapters/claude.md): ``file:<file_path>`` for Read/Write/Edit,
    every program a Bash command would run (docs/decisions.md#program-subjects); none else."""
    arguments = call_input if isinstance(call_input, dict) else {}
    if tool in _FILE_TOOLS:
        return spelled_file_subjects(arguments.get("file_path"), cwd)
    if tool == "Bash":
        command = arguments.get("command")
        return command_subjects(command) if isinstance(command, str) else ()
    return ()


CATALOGUE_PREFIX = "mcp__metaharness__"

DESCRIBING_TOOL = "ToolSearch"
"""Claude Code 2.1.332's tool that loads a deferred tool's schema (``WebFetch``, ``NotebookEdit``, …)
and performs nothing itself. It is a describing question: every frame admits it, as the owned
surface's ``tool_search``, and the deferred tool it loads is decided when it is called."""

CLAUDE_NO_OPERATION: Mapping[str, str] = MappingProxyType(
    {
        DESCRIBING_TOOL: "loads a deferred tool's schema and performs nothing; every frame admits it",
        "DeferredToolPlaceholder": "a placeholder that keeps deferred loading on; the model is told never to call it",
        "ListAgents": "lists the agents the session can message",
        "SendMessage": "messages another agent or session",
        "ReportFindings": "reports review findings to the host's interface",
        "ScheduleWakeup": "schedules the next iteration of /loop",
        "Workflow": "runs a script that spawns agents in the background",
        "CronCreate": "schedules a prompt",
        "CronDelete": "removes a scheduled prompt",
        "CronList": "lists scheduled prompts",
        "EnterWorktree": "moves the session into a git worktree",
        "ExitWorktree": "leaves a git worktree",
        "Monitor": "watches a background task's output",
        "TaskStop": "stops a background task",
        "NotebookEdit": "edits a Jupyter notebook's cells",
        "WebSearch": "searches the web",
    }
)
"""Each tool the pinned Claude Code offers (its API tool list and the deferred tools named beside it)
that no operation renders to, and what it does; a frame never admits one but ``ToolSearch``
(docs/vendor-facts.md)."""


def is_describing_question(tool: str, catalogue: Catalogue | None) -> bool:
    """A native run's ``ToolSearch`` call: admitted by every frame though it has no operation."""
    return catalogue is None and tool == DESCRIBING_TOOL


def resolve_claude_call(
    tool: str, call_input: Any, cwd: str | None, catalogue: Catalogue | None
) -> tuple[tuple[Operation, ...], tuple[str, ...]]:
    """A call's operations and subjects: the rendering table on a native run; on a catalogue run the
    entry behind ``mcp__metaharness__<name>`` (docs/hermetic.md#what-an-entry-performs), and nothing for any
    other tool."""
    if catalogue is None:
        return claude_operations(tool), claude_subjects(tool, call_input, cwd)
    if not tool.startswith(CATALOGUE_PREFIX):
        return (), ()
    return resolve_catalogue_call(catalogue, tool[len(CATALOGUE_PREFIX) :], call_input)
