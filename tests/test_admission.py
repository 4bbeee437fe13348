"""Admission under a frame, step by step, with the exact reasons (docs/decisions.md#admission), and operation
resolution from an adapter's rendering (docs/decisions.md#operations, docs/adapters/b10x.md#rendering)."""

from __future__ import annotations

from typing import Any

from helpers.frames import frame_skeleton

from metaharness.pure.admission import (
    Admission,
    admit_call,
    plain_operations,
    resolve_operations,
    uncovered_tool_warning,
)
from metaharness.pure.events import Allow, Deny, WarningRaised
from metaharness.pure.frames import Frame, Operation, seal_frame
from metaharness.pure.globs import glob_matches
from metaharness.pure.subjects import spelled_file_subjects

B10X_RENDERING: dict[str, str | None] = {
    "file.read": "file_read",
    "file.write": "file_write",
    "file.edit": "file_edit",
    "dir.list": "dir_list",
    "search": "search",
    "shell": "run",
    "web.read": None,
    "skill.load": None,
    "subagent.spawn": None,
    "task.todo": None,
    "mcp.call": None,
}

READS = [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]
WRITES = [{"op": "file.write"}, {"op": "file.edit"}]


def frame(operations: list[dict[str, Any]], subjects: list[dict[str, Any]] | None = None) -> Frame:
    document: dict[str, Any] = frame_skeleton("development/default", "implement", "implement", 3, operations=operations)
    if subjects is not None:
        document["subjects"] = subjects
    return seal_frame(document).unwrap()


SPEC_FRAME = frame(
    READS + WRITES,
    [
        {"subject": "file:src/**", "operations": READS + WRITES},
        {"subject": "file:**", "operations": READS},
    ],
)


def admit(f: Frame, tool: str, subjects: tuple[str, ...], **kwargs: Any) -> Admission:
    return admit_call(f, tool, resolve_operations(B10X_RENDERING, tool), subjects, **kwargs)


def test_resolution_reads_the_rendering_backwards() -> None:
    assert resolve_operations(B10X_RENDERING, "file_write") == (Operation("file.write"),)
    assert resolve_operations(B10X_RENDERING, "run") == (Operation("shell"),)
    assert resolve_operations(B10X_RENDERING, "find") == ()
    assert resolve_operations({"file.read": "Read", "search": "Read"}, "Read") == (Operation("file.read"), Operation("search"))


def test_the_spec_stream_denial_of_note_md() -> None:
    assert admit(SPEC_FRAME, "file_write", ("file:note.md",)) == Admission(
        Deny("file:note.md falls under the subject rule file:**, which does not admit file.write; a refusal is the answer, not an obstacle")
    )


def test_a_write_under_src_is_allowed() -> None:
    assert admit(SPEC_FRAME, "file_write", ("file:src/lib/a.py",)) == Admission(Allow())


def test_step_1_uncovered_tool_is_denied_with_a_warning() -> None:
    assert admit(SPEC_FRAME, "find", ("file:.",)) == Admission(
        Deny("find is outside the operation vocabulary this step was framed with, so this step does not admit it"),
        WarningRaised(
            code="UNCOVERED_TOOL",
            message="no operation in the v0.1 vocabulary renders to find, so the frame has no way to admit it",
        ),
    )
    assert uncovered_tool_warning("find") == admit(SPEC_FRAME, "find", ()).warning


def test_step_1_a_catalogue_question_is_allowed() -> None:
    assert admit_call(SPEC_FRAME, "tool_list", (), (), catalogue_question=True) == Admission(Allow())


def test_step_2_names_what_the_step_admits_in_canonical_order() -> None:
    reads_only = frame([{"op": "search"}, {"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}])
    assert admit(reads_only, "run", ("proc:cargo",)) == Admission(
        Deny(
            'this step admits ["dir.list", "file.read", "search"] and run is shell, which it does not; '
            "a refusal is the answer, not an obstacle"
        )
    )
    several = admit_call(reads_only, "Write", (Operation("file.write"), Operation("file.edit")), ())
    assert several.decision == Deny(
        'this step admits ["dir.list", "file.read", "search"] and Write is file.write/file.edit, which it does not; '
        "a refusal is the answer, not an obstacle"
    )
    assert admit(frame([]), "run", ()).decision == Deny(
        "this step admits [] and run is shell, which it does not; a refusal is the answer, not an obstacle"
    )


def test_step_3_no_subject_rules_allows_what_the_operations_admit() -> None:
    assert admit(frame(READS + WRITES), "file_write", ()) == Admission(Allow())


def test_step_4_a_scoped_step_refuses_a_call_without_subjects() -> None:
    assert admit(SPEC_FRAME, "file_write", ()).decision == Deny(
        "no subject could be read from this call and this step scopes subjects, so it is not admitted; "
        "a refusal is the answer, not an obstacle"
    )


def test_step_4_does_not_apply_to_operations_without_subjects() -> None:
    scoped = frame([{"op": "web.read"}], [])
    assert admit_call(scoped, "WebFetch", (Operation("web.read"),), ()) == Admission(Allow())


def test_step_5_an_unmatched_subject() -> None:
    scoped = frame(READS + WRITES, [{"subject": "file:src/**", "operations": READS + WRITES}])
    assert admit(scoped, "file_write", ("file:docs/a.md",)).decision == Deny(
        "file:docs/a.md matches no subject rule of this step, so it is not admitted; a refusal is the answer, not an obstacle"
    )
    assert admit(frame(READS, []), "file_read", ("file:a",)).decision == Deny(
        "file:a matches no subject rule of this step, so it is not admitted; a refusal is the answer, not an obstacle"
    )


def test_step_5_the_first_matching_rule_decides_even_when_a_later_one_would_admit() -> None:
    shadowing = frame(
        READS + WRITES,
        [{"subject": "file:**", "operations": READS}, {"subject": "file:src/**", "operations": READS + WRITES}],
    )
    assert admit(shadowing, "file_write", ("file:src/a.py",)).decision == Deny(
        "file:src/a.py falls under the subject rule file:**, which does not admit file.write; "
        "a refusal is the answer, not an obstacle"
    )


def test_step_6_names_the_first_subject_whose_rule_lists_none() -> None:
    scoped = frame(
        READS + WRITES,
        [
            {"subject": "file:src/**", "operations": READS + WRITES},
            {"subject": "file:**", "operations": READS},
        ],
    )
    multi = admit_call(scoped, "Move", (Operation("file.write"),), ("file:src/a", "file:b", "file:src/c"))
    assert multi.decision == Deny(
        "file:b falls under the subject rule file:**, which does not admit file.write; a refusal is the answer, not an obstacle"
    )


def test_step_6_some_one_operation_must_serve_every_subject() -> None:
    scoped = frame(
        READS + WRITES,
        [
            {"subject": "file:a", "operations": [{"op": "file.write"}]},
            {"subject": "file:b", "operations": [{"op": "file.edit"}]},
        ],
    )
    both = (Operation("file.write"), Operation("file.edit"))
    assert admit_call(scoped, "Patch", both, ("file:a",)).decision == Allow()
    refused = admit_call(scoped, "Patch", both, ("file:a", "file:b"))
    assert refused.decision == Deny(
        "file:a falls under the subject rule file:a, which does not admit file.write/file.edit; "
        "a refusal is the answer, not an obstacle"
    )


def test_mcp_calls_are_equal_only_when_server_and_tool_match() -> None:
    scoped = frame([{"op": "mcp.call", "server": "docs", "tool": "lookup"}])
    assert admit_call(scoped, "mcp__docs__lookup", (Operation("mcp.call", "docs", "lookup"),), ()).decision == Allow()
    other = admit_call(scoped, "mcp__docs__write", (Operation("mcp.call", "docs", "write"),), ())
    assert other.decision == Deny(
        'this step admits ["mcp.call"] and mcp__docs__write is mcp.call, which it does not; a refusal is the answer, not an obstacle'
    )


def test_subagent_spawn_is_admitted_only_when_named() -> None:
    spawn = (Operation("subagent.spawn"),)
    assert isinstance(admit_call(frame(READS + WRITES), "Task", spawn, ()).decision, Deny)
    assert admit_call(frame([{"op": "subagent.spawn"}]), "Task", spawn, ()).decision == Allow()


def test_the_spec_glob_examples() -> None:
    assert glob_matches("file:docs/**", "file:docs/a/b.md")
    assert not glob_matches("file:docs/**", "file:docs")
    assert glob_matches("proc:cargo", "proc:cargo")
    assert not glob_matches("proc:cargo", "proc:/usr/bin/cargo")
    assert glob_matches("file:*.md", "file:note.md") and not glob_matches("file:*.md", "file:a/note.md")
    assert glob_matches("file:?.md", "file:a.md") and not glob_matches("file:?", "file:/")
    assert glob_matches("file:[ab]", "file:[ab]") and not glob_matches("file:[ab]", "file:a")
    assert glob_matches("**", "") and glob_matches("file:**", "file:")


def test_plain_operations_never_name_mcp_call_and_keep_vocabulary_order() -> None:
    rendering = {"file.write": "apply_patch", "file.edit": "apply_patch", "mcp.call": "apply_patch"}
    assert plain_operations(rendering, "apply_patch") == (Operation("file.write"), Operation("file.edit"))
    assert plain_operations(rendering, "Bash") == ()


def test_a_spelled_file_subject_drops_only_the_working_directory_prefix() -> None:
    assert spelled_file_subjects("/w/a/../b", "/w/") == ("file:a/../b",)
    assert spelled_file_subjects("/w/", "/w") == ("file:/w/",)
    assert spelled_file_subjects("/wx/a", "/w") == ("file:/wx/a",)
    assert spelled_file_subjects("/w/a", None) == ("file:/w/a",)
    assert spelled_file_subjects(7, "/w") == ()
