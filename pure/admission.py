"""Admission of one call under a frame (docs/decisions.md#admission), and resolving a call's operations
(docs/decisions.md#operations).

``resolve_operations`` reads an adapter's rendering backwards: a call's operations are those whose
rendering is the called tool's name (a tool may answer to several). ``admit_call`` is the six steps
of docs/decisions.md#admission with their exact reasons; it returns the decision (``Allow`` or ``Deny``, decided by
``frame``) and the ``UNCOVERED_TOOL`` warning when the call resolved to no operation.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from msgspec import Struct

from metaharness.pure.events import Allow, Deny, WarningRaised
from metaharness.pure.frames import MCP_CALL, Frame, Operation, SubjectRule
from metaharness.pure.globs import glob_matches
from metaharness.pure.operations import OPERATION_NAMES

SUBJECT_BEARING: frozenset[str] = frozenset({"file.read", "file.write", "file.edit", "dir.list", "search", "shell"})
"""Operations that touch a subject (docs/decisions.md#admission step 4: ``file.*``, ``dir.list``,
``search``, ``shell``)."""

_NOT_AN_OBSTACLE = "a refusal is the answer, not an obstacle"

FILE_OPERATIONS: frozenset[str] = frozenset({"file.read", "file.write", "file.edit", "dir.list", "search"})
"""The operations of a file tool (docs/decisions.md#harness-pipes)."""

HARNESS_PIPES = ("/proc", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr")
"""Paths through which a file tool reaches the processes and pipes of the run, the harness's own among them."""


class Admission(Struct, frozen=True):
    """What the frame decided for one call, and the ``UNCOVERED_TOOL`` warning when one is due."""

    decision: Allow | Deny
    warning: WarningRaised | None = None


def resolve_operations(rendering: Mapping[str, str | None], tool: str) -> tuple[Operation, ...]:
    """The operations whose rendering is ``tool`` (docs/decisions.md#operations), in vocabulary order; none when no
    operation renders to it. ``rendering`` maps each operation name to its tool name or ``None``."""
    return tuple(Operation(name) for name in OPERATION_NAMES if rendering.get(name) == tool)


def plain_operations(rendering: Mapping[str, str | None], tool: str) -> tuple[Operation, ...]:
    """The operations other than ``mcp.call`` whose rendering is ``tool``, in vocabulary order (an MCP tool's
    operation is read from its name, not looked up)."""
    return tuple(Operation(name) for name in OPERATION_NAMES if name != MCP_CALL and rendering.get(name) == tool)


def uncovered_tool_warning(tool: str) -> WarningRaised:
    """``UNCOVERED_TOOL`` (docs/events.md#warning-codes): the call resolved to no operation under a frame."""
    return WarningRaised(
        code="UNCOVERED_TOOL",
        message=f"no operation in the v0.1 vocabulary renders to {tool}, so the frame has no way to admit it",
    )


def _names(operations: tuple[Operation, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(operation.op for operation in operations))


def _first_rule(rules: tuple[SubjectRule, ...], subject: str) -> SubjectRule | None:
    return next((rule for rule in rules if glob_matches(rule.subject, subject)), None)


def harness_pipe(operations: tuple[Operation, ...], subjects: tuple[str, ...]) -> str | None:
    """The first absolute ``file:`` subject of a file tool's call at or under :data:`HARNESS_PIPES`
    (docs/decisions.md#harness-pipes), else ``None``."""
    if not any(operation.op in FILE_OPERATIONS for operation in operations):
        return None
    for subject in subjects:
        path = posixpath.normpath(subject.removeprefix("file:")) if subject.startswith("file:/") else ""
        if any(path == root or path.startswith(root + "/") for root in HARNESS_PIPES):
            return subject
    return None


def harness_pipe_deny(subject: str) -> Deny:
    """The deny, by ``adapter`` under every frame and before the embedder is asked, of a file tool aimed at a pipe."""
    return Deny(
        f"{subject} reaches the run's own processes and pipes (/proc, /dev/fd, /dev/stdin…), which no file tool "
        f"may touch under any frame; {_NOT_AN_OBSTACLE}"
    )


def harness_pipe_warning(call_id: str, subject: str) -> WarningRaised:
    """``HARNESS_PIPE`` (docs/events.md#warning-codes): observe let a file tool aimed at a pipe through."""
    return WarningRaised(
        code="HARNESS_PIPE",
        message=f"call {call_id} aims a file tool at {subject}, which reaches the run's own processes and pipes; "
        "observe let it through",
    )


def admit_call(
    frame: Frame,
    tool: str,
    operations: tuple[Operation, ...],
    subjects: tuple[str, ...],
    *,
    catalogue_question: bool = False,
) -> Admission:
    """Decide call ``tool`` (resolved to ``operations``, touching ``subjects``) under ``frame`` by
    docs/decisions.md#admission. ``catalogue_question`` marks a listing or describing question on an owned surface,
    which step 1 allows although it resolves to no operation."""
    if not operations:
        if catalogue_question:
            return Admission(Allow())
        return Admission(
            Deny(f"{tool} is outside the operation vocabulary this step was framed with, so this step does not admit it"),
            uncovered_tool_warning(tool),
        )
    candidates = tuple(operation for operation in operations if operation in frame.operations)
    if not candidates:
        admitted = ", ".join(f'"{name}"' for name in _names(frame.operations))
        return Admission(
            Deny(
                f"this step admits [{admitted}] and {tool} is {'/'.join(_names(operations))}, "
                f"which it does not; {_NOT_AN_OBSTACLE}"
            )
        )
    if frame.subjects is None:
        return Admission(Allow())
    if not subjects and any(operation.op in SUBJECT_BEARING for operation in candidates):
        return Admission(
            Deny(
                "no subject could be read from this call and this step scopes subjects, "
                f"so it is not admitted; {_NOT_AN_OBSTACLE}"
            )
        )
    rules: list[SubjectRule] = []
    for subject in subjects:
        rule = _first_rule(frame.subjects, subject)
        if rule is None:
            return Admission(Deny(f"{subject} matches no subject rule of this step, so it is not admitted; {_NOT_AN_OBSTACLE}"))
        rules.append(rule)
    if any(all(operation in rule.operations for rule in rules) for operation in candidates):
        return Admission(Allow())
    blocking = next(
        (index for index, rule in enumerate(rules) if not any(operation in rule.operations for operation in candidates)),
        0,
    )
    return Admission(
        Deny(
            f"{subjects[blocking]} falls under the subject rule {rules[blocking].subject}, "
            f"which does not admit {'/'.join(_names(candidates))}; {_NOT_AN_OBSTACLE}"
        )
    )
