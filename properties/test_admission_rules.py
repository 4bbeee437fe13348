"""Admission (docs/decisions.md#admission): a call whose operations are all outside the frame's ``operations`` is never
allowed, and a subject is judged by the first rule that matches it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.admission import SUBJECT_BEARING, admit_call
from metaharness.pure.events import Allow, Deny
from metaharness.pure.frames import Frame, Operation, seal_frame
from metaharness.pure.globs import glob_matches
from metaharness.pure.operations import OPERATION_NAMES

PLAIN = [name for name in OPERATION_NAMES if name != "mcp.call"]
OPERATION = st.sampled_from(PLAIN).map(Operation) | st.builds(
    Operation, st.just("mcp.call"), st.sampled_from(["s", "t"]), st.sampled_from(["a", "b"])
)
GLOBS = st.sampled_from(["**", "file:**", "file:src/**", "file:*", "file:?", "proc:*", "proc:cargo", "file:src/*.py"])
SUBJECTS = st.sampled_from(["file:a", "file:src/a.py", "file:src/x/y", "proc:cargo", "proc:sh", "file:", "file:b/c"])
TOOL = st.sampled_from(["Write", "run", "mcp__s__a"])


def as_document(operation: Operation) -> dict[str, Any]:
    if operation.op == "mcp.call":
        return {"op": operation.op, "server": operation.server, "tool": operation.tool}
    return {"op": operation.op}


def frame(operations: list[Operation], rules: list[tuple[str, list[Operation]]] | None) -> Frame:
    document: dict[str, Any] = {
        "workflow": {"id": "w", "version": "1"},
        "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [],
        "obligations": [],
        "reaching": [],
        "next": [],
        "handoff": {"handoff": "none"},
        "operations": [as_document(o) for o in operations],
    }
    if rules is not None:
        document["subjects"] = [{"subject": glob, "operations": [as_document(o) for o in ops]} for glob, ops in rules]
    return seal_frame(document).unwrap()


RULES = st.lists(st.tuples(GLOBS, st.lists(OPERATION, max_size=4)), max_size=4)
FRAMES = st.builds(frame, st.lists(OPERATION, max_size=6), st.none() | RULES)


@settings(max_examples=300)
@given(FRAMES, TOOL, st.lists(OPERATION, min_size=1, max_size=3), st.lists(SUBJECTS, max_size=3))
def test_an_operation_outside_the_frame_is_never_allowed(
    f: Frame, tool: str, operations: list[Operation], subjects: list[str]
) -> None:
    decision = admit_call(f, tool, tuple(operations), tuple(subjects)).decision
    if not any(operation in f.operations for operation in operations):
        assert isinstance(decision, Deny)
    if isinstance(decision, Allow):
        admitted = [operation for operation in operations if operation in f.operations]
        assert admitted
        if f.subjects is not None:
            assert subjects or not any(o.op in SUBJECT_BEARING for o in admitted)


@settings(max_examples=200)
@given(FRAMES, TOOL, st.lists(SUBJECTS, max_size=3))
def test_a_call_resolving_to_nothing_is_denied_as_uncovered(f: Frame, tool: str, subjects: list[str]) -> None:
    admission = admit_call(f, tool, (), tuple(subjects))
    assert isinstance(admission.decision, Deny)
    assert admission.warning is not None and admission.warning.code == "UNCOVERED_TOOL"


@settings(max_examples=400)
@given(st.lists(OPERATION, min_size=1, max_size=6), RULES, TOOL, st.lists(OPERATION, min_size=1, max_size=3), SUBJECTS)
def test_the_first_matching_rule_alone_decides_a_subject(
    operations: list[Operation], rules: list[tuple[str, list[Operation]]], tool: str, called: list[Operation], subject: str
) -> None:
    decision = admit_call(frame(operations, rules), tool, tuple(called), (subject,)).decision
    first = next(((glob, ops) for glob, ops in rules if glob_matches(glob, subject)), None)
    candidates = [operation for operation in called if operation in operations]
    if first is None or not candidates:
        assert isinstance(decision, Deny)
        return
    alone = admit_call(frame(operations, [first]), tool, tuple(called), (subject,)).decision
    assert decision == alone
    assert isinstance(decision, Allow) == any(operation in first[1] for operation in candidates)
