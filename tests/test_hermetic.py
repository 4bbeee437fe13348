"""The attestation, the memory walk and the row verdicts (docs/hermetic.md#terms, #rows, #attestation,
#working-directory, #memory-file-walk, #hermetic-modes, docs/adapters/b10x.md#attestation)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from returns.result import Failure

from metaharness.pure.environment import EnvironmentDeclaration, child_environment, credential_posture
from metaharness.pure.events import Hermetic, McpServer, Plugin, RowHow, RowWhy, SessionStarted, Transcript
from metaharness.pure.hermetic import (
    MEMORY_SHAPES,
    LaunchFacts,
    MemoryHit,
    MemoryWalk,
    RowAttestation,
    RowVerdict,
    VerdictFacts,
    attest,
    control_verdict,
    governing_documents,
    memory_row,
    memory_walk,
    row_verdicts,
    workdir_mode,
)
from metaharness.pure.jsonline import compact
from metaharness.shell.facts import gather_memory_facts
from metaharness.shell.tree_facts import directory_identity

SCRATCH = "/tmp/mh-7"


def b10x_facts(workdir_mode: str = "scratch", workdir: str = f"{SCRATCH}/work", **extra: Any) -> LaunchFacts:
    declaration = EnvironmentDeclaration(kind="b10x")
    posture = credential_posture(declaration, {}, False).unwrap()
    environment = child_environment(declaration, {}, SCRATCH, posture).unwrap()
    memory = memory_row("b10x", workdir_mode, MemoryWalk(workdir, (), ())).unwrap()  # type: ignore[arg-type]
    return LaunchFacts(
        kind="b10x",
        mode="strict",
        decisions="frame",
        scratch=SCRATCH,
        workdir_mode=workdir_mode,  # type: ignore[arg-type]
        workdir=workdir,
        h3_how=environment.h3_how(),
        h4_how=posture.h4_how,
        h6_how=posture.h6_how,
        memory=memory,
        **extra,
    )


def started(hermetic: Hermetic, **fields: Any) -> SessionStarted:
    base: dict[str, Any] = {
        "adapter": "b10x",
        "adapter_class": "direct_provider",
        "harness_version": "0.22.0",
        "session_id": None,
        "model": "m",
        "permission_mode": None,
        "credential_source": "none",
        "output_style": None,
        "cwd": f"{SCRATCH}/work",
        "offered_tools": None,
        "withheld": None,
        "slash_commands": None,
        "skills": (),
        "agents": (),
        "plugins": None,
        "mcp_servers": (),
        "inputs_digest": None,
        "transcript": Transcript(path=f"{SCRATCH}/loop.jsonl", digest=None, bytes=None),
        "hermetic": hermetic,
    }
    base.update(fields)
    return SessionStarted(**base)


def verdicts(rows: tuple[Any, ...]) -> dict[str, str]:
    return {row.row: row.verdict for row in rows}


def test_b10x_scratch_attestation_block_is_exact() -> None:
    hermetic = attest(b10x_facts(governing=("frame sha256:abc",)))
    assert compact(hermetic) == (
        b'{"mode":"strict","decisions":"frame","imposed":['
        b'{"row":"H1a","how":"plugins arrive only as named --plugin-dir copies"},'
        b'{"row":"H2","how":"XDG_CONFIG_HOME=/tmp/mh-7/config holds no profile"},'
        b'{"row":"H3","how":"environment constructed: PATH, XDG_CONFIG_HOME"},'
        b'{"row":"H4","how":"no key variable is in the child\'s environment"},'
        b'{"row":"H5","how":"no --mcp-profile; mcp_servers stated []"},'
        b'{"row":"H6","how":"no credential"},'
        b'{"row":"H7","how":"the child runs in /tmp/mh-7/work, which metaharness created"},'
        b'{"row":"H8","how":"no hooks; no ambient discovery"},'
        b'{"row":"H10","how":"frame sha256:abc"},'
        b'{"row":"H11","how":"the ancestor walk from /tmp/mh-7/work found no memory file; HOME is also absent '
        b'from the child"}],'
        b'"declared":[],"unavailable":[{"row":"H9","why":"the version is read from the launch\'s --version probe"}],'
        b'"ambient_inputs":[],"installed_plugins":[]}'
    )


def test_cwd_makes_h7_and_h11_unavailable_and_strict_reads_gap() -> None:
    walk = MemoryWalk("/home/op/repo", (MemoryHit("/home/op/AGENTS.md", "AGENTS.md"),), ("CLAUDE.md",))
    memory = memory_row("b10x", "operator", walk).unwrap()
    assert memory == RowAttestation(
        "H11",
        "unavailable",
        "the child runs in the operator's tree /home/op/repo; memory files in and above it are discoverable: "
        "/home/op/repo/CLAUDE.md, /home/op/AGENTS.md",
    )
    facts = b10x_facts("operator", "/home/op/repo")
    hermetic = attest(msgspec_replace(facts, memory=memory, root_memory_names=("CLAUDE.md",)))
    assert [u.row for u in hermetic.unavailable] == ["H7", "H9", "H11"]
    assert hermetic.ambient_inputs == ("memory file at the working directory's root: CLAUDE.md",)
    rows = row_verdicts(started(hermetic, cwd="/home/op/repo"), VerdictFacts(kind="b10x", pins=("0.22.0",)))
    assert verdicts(rows)["H7"] == "gap" and verdicts(rows)["H11"] == "gap"
    assert control_verdict(rows) == "gap"
    h7 = next(row for row in rows if row.row == "H7")
    assert h7.line() == (
        "  H7   gap gating   record the working directory is ours — unavailable: the child runs in /home/op/repo, "
        "which metaharness did not create, and can write to it"
    )


def msgspec_replace(value: Any, **changes: Any) -> Any:
    return msgspec.structs.replace(value, **changes)


def test_scratch_cwd_is_declared_and_ok_only_when_the_record_cwd_is_the_copy(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    os.symlink(copy, tmp_path / "alias")
    hermetic = attest(b10x_facts("copy", str(copy)))
    assert [entry.row for entry in hermetic.declared] == ["H7"]
    assert hermetic.declared[0].how == (
        f"the embedder declared {copy} as its scratch copy; metaharness did not create it and passes no --add-dir"
    )
    base = VerdictFacts(kind="b10x", pins=("0.22.0",), planned_cwd=directory_identity(str(copy)))
    same = msgspec_replace(base, record_cwd=directory_identity(str(tmp_path / "alias")))
    rows = row_verdicts(started(hermetic, cwd=str(tmp_path / "alias")), same)
    assert verdicts(rows)["H7"] == "ok" and control_verdict(rows) == "unk"
    assert {verdicts(rows)["H12"], verdicts(rows)["H13"]} == {"unk"}
    h7 = next(row for row in rows if row.row == "H7")
    assert h7.detail.startswith("declared by the embedder: the embedder declared")
    other = msgspec_replace(base, record_cwd=directory_identity(str(tmp_path)))
    assert verdicts(row_verdicts(started(hermetic, cwd=str(tmp_path)), other))["H7"] == "gap"
    silent = row_verdicts(started(hermetic, cwd=None), base)
    assert verdicts(silent)["H7"] == "unk" and control_verdict(silent) == "unk"


def test_no_opening_record_is_unk_everywhere() -> None:
    rows = row_verdicts(None, VerdictFacts(kind="codex"))
    assert [row.row for row in rows] == [
        "H1a", "H1b", "H2", "H3", "H4", "H5", "H6", "H7", "H8", "H9", "H10", "H11", "H12", "H13", "H14"
    ]  # fmt: skip
    assert {row.verdict for row in rows} == {"unk"} and {row.detail for row in rows} == {"no opening record"}


def test_a_record_silent_on_plugins_and_mcp_reads_unk() -> None:
    facts = msgspec_replace(b10x_facts(), kind="codex")
    hermetic = attest(facts)
    record = started(hermetic, adapter="codex", plugins=None, mcp_servers=None, output_style="default")
    rows = verdicts(row_verdicts(record, VerdictFacts(kind="codex", pins=("0.22.0",))))
    assert rows["H1a"] == "unk" and rows["H5"] == "unk" and rows["H1b"] == "ok"


def test_claude_plugins_exclude_builtins_and_name_them() -> None:
    hermetic = attest(msgspec_replace(b10x_facts(), kind="claude", mcp_servers=("metaharness",)))
    plugins = (
        Plugin(name="web", source="web@builtin", version=None),
        Plugin(name="mine", source="/s/plugins/mine", version="1"),
    )
    facts = VerdictFacts(kind="claude", declared_plugins=("mine",), launch_mcp_servers=("metaharness",))
    record = started(hermetic, plugins=plugins, mcp_servers=(McpServer(name="metaharness", status="connected"),))
    rows = {row.row: row for row in row_verdicts(record, facts)}
    assert rows["H1a"].verdict == "ok"
    assert rows["H1a"].detail.startswith("plugins [mine] are the declared set [mine]; built-in, not counted: [web]")
    assert rows["H5"].verdict == "ok"
    assert rows["H1b"].verdict == "unk"
    undeclared = row_verdicts(record, msgspec_replace(facts, declared_plugins=()))
    assert verdicts(undeclared)["H1a"] == "gap"


def test_b10x_plugin_prefixes_in_skills_and_agents() -> None:
    hermetic = attest(b10x_facts())
    facts = VerdictFacts(kind="b10x", declared_plugins=("kit",))
    assert verdicts(row_verdicts(started(hermetic, skills=("kit:lint", "plain")), facts))["H1a"] == "ok"
    assert verdicts(row_verdicts(started(hermetic, agents=("other:x",)), facts))["H1a"] == "gap"
    assert verdicts(row_verdicts(started(hermetic, skills=None, agents=None), facts))["H1a"] == "unk"
    assert verdicts(row_verdicts(started(hermetic, skills=("other:x",)), VerdictFacts(kind="b10x")))["H1a"] == "ok"


@pytest.mark.parametrize(
    ("source", "declared", "verdict"),
    [("api-key:environment", True, "ok"), ("none", True, "gap"), ("oauth:file", False, "ok"),
     ("ANTHROPIC_API_KEY", False, "gap"), (None, False, "unk")],
)
def test_h4_compares_names_a_key_with_declared_a_key(source: str | None, declared: bool, verdict: str) -> None:
    record = started(attest(b10x_facts()), credential_source=source)
    assert verdicts(row_verdicts(record, VerdictFacts(kind="b10x", declared_key=declared)))["H4"] == verdict


def test_h9_reads_the_pins() -> None:
    hermetic = attest(b10x_facts())
    facts = VerdictFacts(kind="b10x", pins=("0.22.0",))
    assert verdicts(row_verdicts(started(hermetic), facts))["H9"] == "ok"
    assert verdicts(row_verdicts(started(hermetic, harness_version="0.1.0"), facts))["H9"] == "gap"
    assert verdicts(row_verdicts(started(hermetic, harness_version=None), facts))["H9"] == "unk"


def test_claude_h11_needs_a_canary_entry_for_the_record_version() -> None:
    walk = MemoryWalk("/w", (), ())
    memory = memory_row("claude", "scratch", walk, frozenset()).unwrap()
    hermetic = attest(msgspec_replace(b10x_facts(), kind="claude", memory=memory))
    record = started(hermetic, harness_version="2.1.332")
    assert verdicts(row_verdicts(record, VerdictFacts(kind="claude", canary_versions=("2.1.332",))))["H11"] == "ok"
    assert verdicts(row_verdicts(record, VerdictFacts(kind="claude")))["H11"] == "unk"


def test_launch_rows_not_attested_are_unk() -> None:
    empty = Hermetic(mode="on", decisions="observe", imposed=(), declared=(), unavailable=(), ambient_inputs=(),
                     installed_plugins=())
    rows = verdicts(row_verdicts(started(empty), VerdictFacts(kind="b10x")))
    assert all(rows[row] == "unk" for row in ("H2", "H3", "H6", "H7", "H8", "H11"))
    assert rows["H10"] == "ok"


def test_memory_row_outcomes_per_kind() -> None:
    hit = MemoryHit("/tmp/AGENTS.md", "AGENTS.md")
    rules = MemoryHit("/tmp/.claude/rules/a.md", ".claude/rules/*.md")
    found = MemoryWalk("/tmp", (hit,), ())
    refusal = memory_row("codex", "scratch", found)
    assert isinstance(refusal, Failure) and refusal.failure().code == "memory-ancestor-found"
    assert refusal.failure().message == "the ancestor walk from /tmp found /tmp/AGENTS.md"
    assert memory_row("codex", "copy", found).unwrap().state == "unavailable"
    assert memory_row("b10x", "scratch", found).unwrap().state == "unavailable"
    assert memory_row("b10x", "copy", found).unwrap().state == "unavailable"
    assert isinstance(memory_row("claude", "scratch", found), Failure)
    assert isinstance(memory_row("claude", "scratch", found, frozenset({"AGENTS.md"})), Failure)
    unloaded = memory_row("claude", "scratch", MemoryWalk("/tmp", (rules,), ()), frozenset({"AGENTS.md"}))
    assert unloaded.unwrap().state == "imposed" and "/tmp/.claude/rules/a.md" in unloaded.unwrap().text
    assert memory_row("claude", "copy", found).unwrap().state == "unavailable"


def test_the_walk_over_a_real_tree(tmp_path: Path) -> None:
    top = tmp_path / "top"
    work = top / "a" / "work"
    (work / ".claude" / "rules").mkdir(parents=True)
    (top / "CLAUDE.md").write_text("x")
    (top / "a" / ".claude" / "rules").mkdir(parents=True)
    (top / "a" / ".claude" / "rules" / "r.md").write_text("x")
    os.symlink("/nonexistent", top / "a" / "AGENTS.md")
    (work / "AGENTS.md").write_text("own")
    os.symlink(work, tmp_path / "alias")
    start, found = gather_memory_facts(str(tmp_path / "alias"), MEMORY_SHAPES["claude"])
    walk = memory_walk(start, found)
    assert walk.start == str(work) and walk.root_names == ("AGENTS.md",)
    inside = [hit for hit in walk.hits if hit.path.startswith(str(top))]
    assert inside == [
        MemoryHit(f"{top}/a/.claude/rules/r.md", ".claude/rules/*.md"),
        MemoryHit(f"{top}/a/AGENTS.md", "AGENTS.md"),
        MemoryHit(f"{top}/CLAUDE.md", "CLAUDE.md"),
    ]
    start, found = gather_memory_facts(str(top / "a"), MEMORY_SHAPES["codex"])
    scratch = memory_walk(start, found, scratch_parent=True)
    assert scratch.root_names == () and MemoryHit(f"{top}/a/AGENTS.md", "AGENTS.md") in scratch.hits


def test_control_verdict_gap_outranks_unk() -> None:
    rows = row_verdicts(None, VerdictFacts(kind="b10x"))
    assert control_verdict(rows) == "unk"
    gap = msgspec_replace(rows[0], verdict="gap")
    assert control_verdict((gap, *rows[1:])) == "gap"
    advisory_gap = msgspec_replace(rows[2], verdict="gap")
    ok_rows = tuple(msgspec_replace(row, verdict="ok") for row in rows)
    assert control_verdict((*ok_rows[:2], advisory_gap, *ok_rows[3:])) == "ok"


def test_governing_documents_and_workdir_mode() -> None:
    assert governing_documents() == ()
    assert governing_documents("sha256:f", "c" * 4, [("docs/a.md", "ab")], "d" * 4) == (
        "frame sha256:f", "catalogue copy sha256 cccc", "context docs/a.md sha256 ab", "spec sha256 dddd",
    )
    assert (workdir_mode(None, False), workdir_mode("/r", False), workdir_mode("/r", True)) == (
        "scratch", "operator", "copy",
    )


def test_h14_rests_on_the_attestation_and_the_harness_environment() -> None:
    imposed = RowHow(row="H14", how="CLAUDE_CODE_SHELL_PREFIX starts every Bash command in the tools' layer")
    hermetic = Hermetic(mode="on", decisions="frame", imposed=(imposed,), declared=(), unavailable=(),
                        ambient_inputs=(), installed_plugins=())  # fmt: skip
    rows = {verdict: _row(row_verdicts(started(hermetic), VerdictFacts(kind="claude", tools=verdict)), "H14")
            for verdict in ("ok", "gap", "unk")}  # fmt: skip
    assert rows["ok"].verdict == "ok" and rows["ok"].detail.endswith("; the harness was started with the tools' layer's entry")
    assert rows["gap"].verdict == "gap" and "without the tools' layer's entry" in rows["gap"].detail
    assert rows["unk"].verdict == "unk"
    unavailable = msgspec_replace(hermetic, imposed=(), unavailable=(RowWhy(row="H14", why="beside the harness"),))
    row = _row(row_verdicts(started(unavailable), VerdictFacts(kind="codex", tools="ok")), "H14")
    assert (row.verdict, row.detail) == ("gap", "unavailable: beside the harness")


def _row(rows: tuple[RowVerdict, ...], name: str) -> RowVerdict:
    return next(row for row in rows if row.row == name)


def test_a_row_detail_naming_what_the_child_named_stays_one_report_line() -> None:
    """A detail carries names a tree the child wrote supplies (a skill's plugin, a memory file's path): a line
    break in one never starts a line of its own, so no ``control verdict: ok`` line can be forged in the report."""
    row = RowVerdict(row="H12", verdict="gap", severity="gating", assertion="record", control="plugins",
                     detail="skills and agents name plugins [x\ncontrol verdict: ok\r\naudit verdict: ok]")  # fmt: skip
    assert row.line() == (
        "  H12  gap gating   record plugins — skills and agents name plugins [x control verdict: ok audit verdict: ok]"
    )
