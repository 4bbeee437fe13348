"""``metaharness run b10x`` drives the project's loop on a provider it has never seen (issue 4's bar).

Observe, frame (deny, allow, subject deny) and ask (deny, allow) on both wires, each against the
independent provider of ``tests/providers/unseen.py``; the workspace changes only where a decision
allowed it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from codex_process import of
from governed_b10x import LOOP, METAHARNESS, run, stream, workspace
from providers.unseen import NOTE, STYLES, Provider, running_provider

from metaharness.pure.frames import frame_document, seal_frame

WIRES = ("openai-responses", "anthropic-messages")
READS = [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]
WRITES = [*READS, {"op": "file.write"}]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOME whose ``.local/bin`` links the project's loop, so the governed child finds it on PATH."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    return home


def frame_file(tmp_path: Path, operations: list[dict], subjects: list[dict] | None = None) -> str:
    """A sealed one-step frame admitting ``operations`` (and the subject rules, when given)."""
    raw: dict[str, Any] = {
        "workflow": {"id": "w", "version": "1"}, "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [], "obligations": [], "reaching": [], "next": [], "handoff": {"handoff": "none"},
        "operations": operations,
    }
    if subjects is not None:
        raw["subjects"] = subjects
    path = tmp_path / "frame.json"
    path.write_bytes(frame_document(seal_frame(raw).unwrap()))
    return str(path)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def common(provider: Provider, wire: str, work: Path) -> list[str]:
    return [
        "-p", "write the note", "--model", "unseen-model-1", "--model-endpoint", provider.base_url,
        "--model-wire", wire, "--cwd", str(work),
    ]


def last_result(provider: Provider) -> Any:
    answered = [s for s in provider.seen if s.status == 200]
    assert [s.error for s in provider.seen if s.status == 400] == []
    return answered[-1].results[-1]


@pytest.mark.parametrize("wire", WIRES)
def test_observe_the_write_happens_and_nothing_is_decided(home: Path, wire: str, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    with running_provider("write", STYLES[2]) as provider:
        done = run(home, ["--decisions", "observe", *common(provider, wire, work)])
        assert done.returncode == 0, done.stderr
    events = stream(done)
    assert (work / "note.md").read_text(encoding="utf-8") == NOTE
    assert not of(events, "tool.decided")
    assert of(events, "tool.requested")[0]["decision_required"] is False
    assert last_result(provider).is_error is False
    assert events[-1]["process"] == {"kind": "exited", "code": 0}


@pytest.mark.parametrize("wire", WIRES)
def test_frame_allows_the_admitted_write(home: Path, wire: str, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    frame = frame_file(
        tmp_path, WRITES, [{"subject": "file:note.md", "operations": WRITES}, {"subject": "file:**", "operations": READS}]
    )
    with running_provider("write", STYLES[4]) as provider:
        done = run(home, ["--frame", frame, *common(provider, wire, work)])
        assert done.returncode == 0, done.stderr
    events = stream(done)
    assert [(d["decision"], d["decided_by"]) for d in of(events, "tool.decided")] == [({"decision": "allow"}, "frame")]
    assert (work / "note.md").read_text(encoding="utf-8") == NOTE
    assert last_result(provider).is_error is False


@pytest.mark.parametrize("wire", WIRES)
def test_frame_denies_by_operation_and_by_subject_rule(home: Path, wire: str, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    before = tree(work)
    with running_provider("write", STYLES[1]) as provider:
        done = run(home, ["--frame", frame_file(tmp_path, READS), *common(provider, wire, work)])
        assert done.returncode == 0, done.stderr
        denied = last_result(provider)
    events = stream(done)
    decided = of(events, "tool.decided")[0]
    assert decided["decided_by"] == "frame" and decided["decision"]["decision"] == "deny"
    assert of(events, "tool.result")[0]["is_error"] is True
    assert denied.is_error and "`file_write` was not approved" in denied.text
    assert tree(work) == before
    subject_frame = frame_file(
        tmp_path, WRITES, [{"subject": "file:src/**", "operations": WRITES}, {"subject": "file:**", "operations": READS}]
    )
    with running_provider("write", STYLES[3]) as provider:
        events = stream(run(home, ["--frame", subject_frame, *common(provider, wire, work)]))
        assert last_result(provider).is_error
    assert of(events, "tool.decided")[0]["decision"]["reason"] == (
        "file:note.md falls under the subject rule file:**, which does not admit file.write; a refusal is the answer, not an obstacle"
    )
    assert tree(work) == before


def ask(home: Path, provider: Provider, wire: str, work: Path, decision: dict[str, str]) -> list[dict[str, Any]]:
    """``--decisions ask``: each ``tool.requested`` awaiting a decision is answered by ``tool.decide`` on stdin."""
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    child = subprocess.Popen(
        [str(METAHARNESS), "run", "b10x", "--decisions", "ask", *common(provider, wire, work)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    assert child.stdin is not None and child.stdout is not None
    lines: list[bytes] = []
    for line in iter(child.stdout.readline, b""):
        lines.append(line)
        event = json.loads(line)
        if event["event"] == "tool.requested" and event.get("decision_required"):
            command = {"format": "metaharness.command/1", "id": f"d{len(lines)}", "command": "tool.decide",
                       "call_id": event["call_id"], "decision": decision}
            child.stdin.write(json.dumps(command).encode() + b"\n")
            child.stdin.flush()
    child.wait(timeout=60)
    assert child.returncode == 0
    return stream(subprocess.CompletedProcess([], 0, b"".join(lines), b""))


@pytest.mark.parametrize("wire", WIRES)
def test_ask_embedder_denies_then_allows(home: Path, wire: str, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    before = tree(work)
    with running_provider("write", STYLES[4]) as provider:
        events = ask(home, provider, wire, work, {"decision": "deny", "reason": "notes are written in the next step"})
        denied = last_result(provider)
    decided = of(events, "tool.decided")[0]
    assert (decided["decided_by"], decided["decision"]["reason"]) == ("embedder", "notes are written in the next step")
    assert [r["outcome"]["result"] for r in of(events, "command.result")] == ["ok"]
    assert denied.is_error and "notes are written in the next step" in denied.text
    assert tree(work) == before
    swapped = next(s for s in STYLES if s.swapped_ids)
    with running_provider("write", swapped) as provider:
        events = ask(home, provider, wire, work, {"decision": "allow"})
        assert last_result(provider).is_error is False
    assert of(events, "tool.decided")[0]["decision"] == {"decision": "allow"}
    assert (work / "note.md").read_text(encoding="utf-8") == NOTE


@pytest.mark.parametrize("wire", WIRES)
def test_ask_parallel_calls_deny_each_and_the_model_hears_it(home: Path, wire: str, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    before = tree(work)
    with running_provider("parallel", STYLES[5]) as provider:
        events = ask(home, provider, wire, work, {"decision": "deny", "reason": "no notes today"})
        results = [s for s in provider.seen if s.status == 200][-1].results
    assert len(of(events, "tool.decided")) == 2
    assert [r.is_error for r in results] == [True, True]
    assert tree(work) == before




@pytest.mark.parametrize("wire", WIRES)
def test_a_call_id_reused_in_a_later_turn_is_denied_as_mutated_and_nothing_is_written(
    home: Path, wire: str, tmp_path: Path
) -> None:
    """A provider numbering calls per response (``call_0`` every turn) presents the write under the read's
    id: docs/decisions.md#correlation-and-abandonment denies it by adapter with ``REQUEST_MUTATED``, even when the
    embedder would allow."""
    work = workspace(tmp_path)
    before = tree(work)
    style = next(s for s in STYLES if s.ids_restart_each_response)
    with running_provider("multi", style) as provider:
        events = ask(home, provider, wire, work, {"decision": "allow"})
        assert last_result(provider).is_error
    requested = of(events, "tool.requested")
    assert [r["name"] for r in requested] == ["file_read", "file_write"] and len({r["call_id"] for r in requested}) == 1
    assert [w["code"] for w in of(events, "warning")][-1] == "REQUEST_MUTATED"
    assert [(d["decided_by"], d["decision"]["decision"]) for d in of(events, "tool.decided")] == [("adapter", "deny")]
    assert tree(work) == before


@pytest.mark.parametrize("wire", WIRES)
def test_frame_decides_parallel_calls_each_and_only_the_admitted_one_writes(home: Path, wire: str, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    frame = frame_file(
        tmp_path, WRITES, [{"subject": "file:a.md", "operations": WRITES}, {"subject": "file:**", "operations": READS}]
    )
    with running_provider("parallel", STYLES[1]) as provider:
        done = run(home, ["--frame", frame, *common(provider, wire, work)])
        assert done.returncode == 0, done.stderr
        results = [s for s in provider.seen if s.status == 200][-1].results
    events = stream(done)
    assert [d["decision"]["decision"] for d in of(events, "tool.decided")] == ["allow", "deny"]
    assert [r.is_error for r in results] == [False, True]
    assert (work / "a.md").read_text() == "first of two\n" and not (work / "b.md").exists()
