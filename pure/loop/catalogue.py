"""The tool catalogue (docs/loop.md#tools): entries, schemas, publication, argument checks, subjects."""

from __future__ import annotations

from typing import Any

import msgspec

from metaharness.pure.loop.record import Withheld
from metaharness.pure.wires.neutral import ToolSpec

ARGUMENTS_CAP = 65536
RESULT_CAP = 262144


class Entry(msgspec.Struct, frozen=True):
    """One catalogue entry: its name, operation, risk and description."""

    name: str
    operation: str
    risk: str
    description: str


def _integer(minimum: int, maximum: int | None, default: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum}
    if maximum is not None:
        schema["maximum"] = maximum
    schema["default"] = default
    return schema


_STRING: dict[str, Any] = {"type": "string"}

CATALOGUE: tuple[Entry, ...] = (
    Entry("file_read", "file.read", "low", "Read a UTF-8 text file in the workspace; returns numbered lines."),
    Entry("dir_list", "dir.list", "low", "List one directory of the workspace."),
    Entry(
        "search",
        "search",
        "low",
        "Search file contents in the workspace for a literal string, or a regular expression when regex is true.",
    ),
    Entry("find", "find", "low", "Find workspace paths whose name matches a glob."),
    Entry("file_write", "file.write", "medium", "Create or replace a whole text file in the workspace."),
    Entry("file_edit", "file.edit", "medium", "Replace exactly one occurrence of old with new in a workspace file."),
    Entry("run", "shell", "high", "Run one allowed program with arguments in the workspace root. Not a shell."),
)
BY_NAME: dict[str, Entry] = {entry.name: entry for entry in CATALOGUE}
SKILL = Entry("skill", "skill.load", "low", "Load one of the listed skills by name; returns its instructions.")
"""The loop's own tool, published after the catalogue when at least one skill was loaded."""

_PROPERTIES: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "file_read": (
        {
            "path": _STRING,
            "offset": _integer(1, None, 1),
            "limit": _integer(1, None, 2000),
            "max_bytes": _integer(1, 262144, 65536),
        },
        ("path",),
    ),
    "dir_list": ({"path": {"type": "string", "default": "."}}, ()),
    "search": (
        {
            "pattern": _STRING,
            "path": _STRING,
            "regex": {"type": "boolean", "default": False},
            "glob": _STRING,
            "context": _integer(0, 5, 0),
            "max_results": _integer(1, 200, 100),
        },
        ("pattern",),
    ),
    "find": ({"glob": _STRING, "path": _STRING, "max_results": _integer(1, 1000, 200)}, ("glob",)),
    "file_write": ({"path": _STRING, "text": _STRING}, ("path", "text")),
    "file_edit": ({"path": _STRING, "old": _STRING, "new": _STRING}, ("path", "old", "new")),
}


def schema_of(name: str, programs: tuple[str, ...], skills: tuple[str, ...] = ()) -> dict[str, Any]:
    """The input schema of an entry (``additionalProperties:false``); ``skill`` takes one of the loaded
    skill names (docs/loop-extensions.md)."""
    properties: dict[str, Any]
    required: tuple[str, ...]
    if name == SKILL.name:
        properties = {"name": {"type": "string", "enum": list(skills)}}
        required = ("name",)
    elif name == "run":
        properties = {
            "argv": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "prefixItems": [{"type": "string", "enum": list(programs)}],
            }
        }
        required = ("argv",)
    else:
        properties, required = _PROPERTIES[name]
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


class Publication(msgspec.Struct, frozen=True):
    """The published toolset (the policy) and the withheld entries."""

    published: tuple[Entry, ...]
    withheld: tuple[Withheld, ...]
    programs: tuple[str, ...]
    skills: tuple[str, ...] = ()

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools as the model sees them, in catalogue order."""
        return tuple(
            ToolSpec(e.name, e.description, schema_of(e.name, self.programs, self.skills)) for e in self.published
        )

    def names(self) -> tuple[str, ...]:
        """Published names in catalogue order."""
        return tuple(e.name for e in self.published)


def publish(root_writable: bool, programs: tuple[str, ...], skills: tuple[str, ...] = ()) -> Publication:
    """Reads always; writes when the root is writable; ``run`` with at least one program; ``skill``
    last, with at least one loaded skill (docs/loop-extensions.md)."""
    published: list[Entry] = []
    withheld: list[Withheld] = []
    for entry in CATALOGUE:
        if entry.name in ("file_write", "file_edit") and not root_writable:
            withheld.append(Withheld(entry.name, "the workspace is not writable"))
        elif entry.name == "run" and not programs:
            withheld.append(Withheld(entry.name, "no program was allowed; pass --allow-program"))
        else:
            published.append(entry)
    if skills:
        published.append(SKILL)
    return Publication(tuple(published), tuple(withheld), programs, skills)


def subjects_of(name: str, arguments: Any) -> tuple[str, ...]:
    """Subjects from the arguments as spelled; an omitted path is ``.`` (docs/loop.md#tools)."""
    if not isinstance(arguments, dict) or name == SKILL.name:
        return ()
    if name == "run":
        argv = arguments.get("argv")
        if isinstance(argv, list) and argv and isinstance(argv[0], str):
            return (f"proc:{argv[0]}",)
        return ()
    path = arguments.get("path", ".")
    return (f"file:{path}",) if isinstance(path, str) else ()


def check_arguments(name: str, arguments: Any, skills: tuple[str, ...] = ()) -> str | None:
    """The schema refusal text for ``arguments``, or ``None`` when they fit (docs/loop.md#refusal-texts, gate 3)."""
    prefix = f"`{name}` arguments:"
    if not isinstance(arguments, dict):
        return f"{prefix} must be an object"
    if name == SKILL.name:
        return _skill_problem(prefix, arguments, skills)
    if name == "run":
        properties: dict[str, Any] = {"argv": None}
        required: tuple[str, ...] = ("argv",)
    else:
        properties, required = _PROPERTIES[name]
    for field in required:
        if field not in arguments:
            return f"{prefix} `{field}` is required"
    for field, value in arguments.items():
        if field not in properties:
            return f"{prefix} `{field}` is not allowed"
        problem = _argv_problem(value) if name == "run" else _value_problem(properties[field], value)
        if problem is not None:
            return f"{prefix} `{field}` must be {problem}"
    return None


def _skill_problem(prefix: str, arguments: dict[str, Any], skills: tuple[str, ...]) -> str | None:
    if "name" not in arguments:
        return f"{prefix} `name` is required"
    extra = next((field for field in arguments if field != "name"), None)
    if extra is not None:
        return f"{prefix} `{extra}` is not allowed"
    if arguments["name"] not in skills:
        return f"{prefix} `name` must be one of " + ", ".join(f"`{skill}`" for skill in skills)
    return None


def _argv_problem(value: Any) -> str | None:
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        return "a non-empty list of strings"
    return None


def _value_problem(schema: dict[str, Any], value: Any) -> str | None:
    kind = schema["type"]
    if kind == "string":
        return None if isinstance(value, str) else "a string"
    if kind == "boolean":
        return None if isinstance(value, bool) else "a boolean"
    minimum = schema["minimum"]
    maximum = schema.get("maximum")
    span = f"an integer from {minimum} to {maximum}" if maximum is not None else f"an integer of at least {minimum}"
    if not isinstance(value, int) or isinstance(value, bool):
        return span
    if value < minimum or (maximum is not None and value > maximum):
        return span
    return None
