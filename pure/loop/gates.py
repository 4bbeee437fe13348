"""Gates 1–4 of a call that need no filesystem (docs/loop.md#gates): published, size, schema, entry rules."""

from __future__ import annotations

from typing import Any

import msgspec

from metaharness.pure.jsonline import compact
from metaharness.pure.loop.catalogue import (
    ARGUMENTS_CAP,
    SKILL,
    Entry,
    Publication,
    check_arguments,
    subjects_of,
)
from metaharness.pure.loop.paths import ScopeRule, confine, scope_refusal
from metaharness.pure.loop.record import ToolRequested


class Admitted(msgspec.Struct, frozen=True):
    """A call that passed gates 1–4 lexically; ``relative`` is its confined path (``None`` for ``run`` and
    ``skill``)."""

    entry: Entry
    relative: str | None


class GateRefusal(msgspec.Struct, frozen=True):
    """A call refused by a gate: the optional warning (code, message) and the model-facing result text."""

    warning_code: str | None
    text: str
    warning_message: str = ""

    @property
    def warning(self) -> str:
        """The warning's message: its own when given, else the result text."""
        return self.warning_message or self.text


def unpublished_warning(name: str) -> str:
    """The ``unpublished-tool`` warning text."""
    return f"`{name}` is not one of this run's tools"


def program_refusal(program: str, programs: tuple[str, ...]) -> str:
    """The ``program-refused`` text."""
    return f"`{program}` is not a program this run may start; allowed: " + ", ".join(f"`{p}`" for p in programs)


def announce_call(call_id: str, name: str, arguments: Any, publication: Publication) -> ToolRequested:
    """The ``tool-requested`` line: ``operation`` and ``subjects`` only for a published entry
    (docs/loop.md#the-record)."""
    entry = next((e for e in publication.published if e.name == name), None)
    if entry is None:
        return ToolRequested(call_id=call_id, name=name, arguments=arguments)
    return ToolRequested(
        call_id=call_id,
        name=name,
        arguments=arguments,
        operation=entry.operation,
        subjects=subjects_of(name, arguments),
    )


def admit_call(
    name: str, arguments: Any, publication: Publication, scope_rules: tuple[ScopeRule, ...], root: str
) -> Admitted | GateRefusal:
    """Gates 1–4, first failure wins (docs/loop.md#gates)."""
    entry = next((e for e in publication.published if e.name == name), None)
    if entry is None:
        warning = unpublished_warning(name)
        return GateRefusal("unpublished-tool", f"{warning}; call only what was published", warning)
    size = len(compact(arguments))
    if size > ARGUMENTS_CAP:
        return GateRefusal(None, f"the arguments are {size} bytes, over the {ARGUMENTS_CAP} byte bound")
    problem = check_arguments(name, arguments, publication.skills)
    if problem is not None:
        return GateRefusal(None, problem)
    if name == SKILL.name:
        return Admitted(entry, None)
    if name == "run":
        program = arguments["argv"][0]
        if program not in publication.programs:
            return GateRefusal("program-refused", program_refusal(program, publication.programs))
        return Admitted(entry, None)
    path = arguments.get("path", ".")
    confined = confine(path, root)
    relative = confined.value_or(None)
    if relative is None:
        return GateRefusal("path-refused", confined.failure())
    if name in ("file_write", "file_edit"):
        refusal = scope_refusal(path, relative, scope_rules, name)
        if refusal is not None:
            return GateRefusal("scope-refused", refusal)
    return Admitted(entry, relative)
