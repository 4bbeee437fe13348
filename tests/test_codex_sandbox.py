"""Codex's sandbox refusals read from the record's structure (docs/adapters/codex.md#sandbox-refusals): the
turn's grant, the call's write subjects and the absence of a successful completion; never a tool's text."""

from __future__ import annotations

from typing import Any

from metaharness.pure.bounds import SANDBOX_ENTRY_LIMIT
from metaharness.pure.codex.sandbox import SandboxWatch, sandbox_denials, sandbox_grant, watched, writable
from metaharness.pure.events import Allow, Deny, ToolDecided, ToolRequested, ToolResult

WORK = "/srv/work"
TMPDIR = "/run/scratch/tmp"
PROSE = "patch rejected: writing outside of the project; rejected by user approval settings"


def entry(path: dict[str, Any], access: str) -> dict[str, Any]:
    return {"path": path, "access": access}


def special(kind: str) -> dict[str, Any]:
    return {"type": "special", "value": {"kind": kind}}


def path(value: str) -> dict[str, Any]:
    return {"type": "path", "path": value}


def context(*entries: dict[str, Any], kind: str = "restricted") -> dict[str, Any]:
    """A ``turn_context`` shaped as the pinned codex writes it under ``workspace-write``."""
    return {"cwd": WORK, "file_system_sandbox_policy": {"kind": kind, "entries": list(entries)}}


WORKSPACE = context(
    entry(special("root"), "read"), entry(path(WORK), "write"), entry(special("tmpdir"), "write"),
    entry(path(f"{WORK}/.git"), "read"),
)  # fmt: skip


def request(call_id: str, name: str, operations: tuple[str, ...], subjects: tuple[str, ...]) -> ToolRequested:
    return ToolRequested(call_id=call_id, name=name, input={"command": "x"}, operations=operations, subjects=subjects,
                         decision_required=False, deadline_ms=None, seam="hook")  # fmt: skip


def result(call_id: str, is_error: bool | None, content: Any = None) -> ToolResult:
    return ToolResult(exit_code=None, outcome_source=None, call_id=call_id, is_error=is_error, content=content,
                      bytes=None, tool_use_result=None)  # fmt: skip


def test_the_longest_enclosing_entry_decides_and_tmpdir_is_the_childs():
    grant = sandbox_grant(WORKSPACE, TMPDIR)
    assert grant is not None
    assert writable(grant, "note.md") and writable(grant, f"{WORK}/src/a.py") and writable(grant, f"{TMPDIR}/x")
    assert not writable(grant, "/etc/passwd") and not writable(grant, ".git/config")
    assert not writable(grant, "../outside.md") and not writable(grant, "/srv/workshop/a")


def test_a_grant_the_record_does_not_place_attributes_nothing():
    assert sandbox_grant(WORKSPACE, None) is None, "a writable tmpdir with no TMPDIR known cannot be placed"
    assert sandbox_grant(context(entry(special("project_roots"), "write")), TMPDIR) is None
    assert sandbox_grant(context(entry(path("relative"), "write")), TMPDIR) is None
    assert sandbox_grant({"cwd": WORK}, TMPDIR) is None
    many = context(*(entry(path(f"/p/{n}"), "read") for n in range(SANDBOX_ENTRY_LIMIT + 1)))
    assert sandbox_grant(many, TMPDIR) is None
    unrestricted = sandbox_grant(context(kind="unrestricted"), TMPDIR)
    assert unrestricted is not None and writable(unrestricted, "/etc/passwd")


def test_a_write_outside_the_grant_that_did_not_succeed_is_codexs_refusal():
    grant = sandbox_grant(WORKSPACE, TMPDIR)
    watch = watched(SandboxWatch(), grant, request("c1", "apply_patch", ("file.write",), ("file:/etc/x.md",)))
    watch = watched(watch, grant, ToolDecided(call_id="c1", decision=Allow(), decided_by="observe", seam="hook",
                                              latency_ms=None))  # fmt: skip
    watch = watched(watch, grant, result("c1", None, PROSE))
    denials = sandbox_denials(watch)
    assert denials is not None and [(d.tool_name, d.tool_use_id) for d in denials] == [("apply_patch", "c1")]


def test_metaharness_deny_or_codexs_success_clears_the_call():
    grant = sandbox_grant(WORKSPACE, TMPDIR)
    outside = request("c1", "apply_patch", ("file.write",), ("file:/etc/x.md",))
    denied = watched(watched(SandboxWatch(), grant, outside), grant, ToolDecided(
        call_id="c1", decision=Deny("no"), decided_by="frame", seam="hook", latency_ms=None))  # fmt: skip
    assert sandbox_denials(denied) is None
    succeeded = watched(watched(SandboxWatch(), grant, outside), grant, result("c1", False))
    assert sandbox_denials(succeeded) is None


def test_a_tools_own_text_never_reads_as_a_refusal():
    """A shell command that prints codex's prose and fails names no file subject, and a write inside the
    grant that fails was not refused by the grant: neither is attributed."""
    grant = sandbox_grant(WORKSPACE, TMPDIR)
    watch = watched(SandboxWatch(), grant, request("s1", "Bash", ("shell",), ("proc:echo",)))
    watch = watched(watch, grant, result("s1", True, PROSE))
    watch = watched(watch, grant, request("p1", "apply_patch", ("file.edit",), ("file:note.md",)))
    watch = watched(watch, grant, result("p1", True, PROSE))
    assert sandbox_denials(watch) is None
    assert sandbox_denials(watched(SandboxWatch(), None, request("c1", "apply_patch", ("file.write",),
                                                                  ("file:/etc/x.md",)))) is None  # fmt: skip
