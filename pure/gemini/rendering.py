"""Resolving a Gemini CLI call to operations and subjects (docs/adapters/gemini.md#rendering).

Resolution is the inverse of the published rendering (``metaharness.pure.gemini.adapter.RENDERING``): each
file tool's ``file_path`` is a ``file:`` subject, ``run_shell_command``'s ``command`` a ``proc:`` subject
(``proc:sh`` for a compound line); any other name resolves to no operation. Subjects are spelt as the call
spells them, with only a ``<cwd>/`` prefix removed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from metaharness.pure.admission import plain_operations
from metaharness.pure.frames import Operation
from metaharness.pure.gemini.adapter import RENDERING
from metaharness.pure.subjects import spelled_file_subjects

_PATH_ARGUMENT: Mapping[str, str] = MappingProxyType(
    {"read_file": "file_path", "write_file": "file_path", "replace": "file_path", "list_directory": "dir_path"}
)
"""The argument naming what each file tool touches, as Gemini CLI 0.61.0 declares it."""

GEMINI_NO_OPERATION: Mapping[str, str] = MappingProxyType(
    {
        "glob": "lists the paths matching a pattern",
        "google_web_search": "asks the model route a grounded search, as another model's generateContent",
        "update_topic": "names the conversation's topic",
        "list_background_processes": "lists the shell commands it started in the background",
        "read_background_output": "reads a background shell command's output",
        "enter_plan_mode": "switches the session into plan mode",
    }
)
"""Each tool the pinned Gemini CLI offers the model that no operation renders to, and what it does; a frame
never admits one (docs/vendor-facts.md)."""


_OPERATIONS: Mapping[str, tuple[Operation, ...]] = MappingProxyType(
    {tool: plain_operations(RENDERING, tool) for tool in RENDERING.values()}
)
"""Each tool the rendering names, with its operations; any other tool has none."""


def gemini_operations(tool: str) -> tuple[Operation, ...]:
    """The operations whose Gemini CLI rendering is ``tool``, in vocabulary order."""
    return _OPERATIONS.get(tool, ())


_COMPOUND = re.compile(r"[;&|<>()`\n]")
"""``; & | < > ( )``, a backquote, a newline (``$(`` holds one of them)."""


def shell_program(command: str) -> str:
    """``proc:<first word>``'s word, or ``sh`` when the command holds ``; & | < > ( )``, a backquote,
    ``$(``, a newline or a leading ``NAME=`` assignment."""
    words = command.split()
    if _COMPOUND.search(command) or not words:
        return "sh"
    name, equals, _ = words[0].partition("=")
    if equals and name and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c == "_" for c in name):
        return "sh"
    return words[0]


def gemini_subjects(tool: str, call_input: Any, cwd: str | None) -> tuple[str, ...]:
    """``file:<path>`` for the file tools, ``proc:<program>`` for ``run_shell_command``; none else."""
    arguments = call_input if isinstance(call_input, dict) else {}
    argument = _PATH_ARGUMENT.get(tool)
    if argument is not None:
        return spelled_file_subjects(arguments.get(argument), cwd)
    if tool == "run_shell_command":
        command = arguments.get("command")
        return (f"proc:{shell_program(command)}",) if isinstance(command, str) else ()
    return ()


def resolve_gemini_call(tool: str, call_input: Any, cwd: str | None) -> tuple[tuple[Operation, ...], tuple[str, ...]]:
    """A call's operations and subjects."""
    return gemini_operations(tool), gemini_subjects(tool, call_input, cwd)
