"""The real ``codex app-server`` (pinned 0.171.0) serving a catalogue against ``b10x-emulator``
(docs/adapters/codex.md#catalogue-app-server, docs/hermetic.md#catalogue-delivery, #calling-a-catalogue-entry).

Emulator scenario ``codex-catalogue-write`` calls the catalogue entry ``write_note`` (at the pin,
through code mode's ``exec``). The run is driven in-process by ``drive_app_server`` over a planned,
materialised codex launch, the way ``run_codex`` drives it; every stream must be well formed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codex_process import CODEX, census, decided, of, sealed_frame, well_formed

from metaharness.pure.budgets import HOOK_TIMEOUT_S
from metaharness.pure.codex.rollout import RolloutLaunch
from metaharness.pure.codex.vendor import PINS
from metaharness.pure.decisions import open_desk
from metaharness.pure.events import Exited, Transcript
from metaharness.pure.options import RunOptions
from metaharness.pure.run_end import RunEnd
from metaharness.shell.codex.app_server import drive_app_server, place_catalogue
from metaharness.shell.codex.inputs import read_codex_catalogue
from metaharness.shell.codex.run import materialise, plan_run
from metaharness.shell.live_engine import StreamLines

pytestmark = [
    pytest.mark.skipif(
        CODEX is None, reason="the pinned Codex CLI 0.171.0 is not installed on the child's PATH (vendors/install.sh)"
    ),
    pytest.mark.usefixtures("own_home"),
]

CATALOGUE = {
    "format": "metaharness.catalogue/1",
    "entries": [
        {
            "name": "write_note",
            "description": "Write one note in the workspace.",
            "performs": "file_write",
            "input": {
                "path": {"type": "string", "required": True, "description": "Path relative to the workspace."},
                "text": {"type": "string", "required": True},
            },
        },
        {
            "name": "read_note",
            "description": "Read one note.",
            "performs": "file_read",
            "input": {"path": {"type": "string", "required": True}},
        },
    ],
}


def catalogue_run(
    root: str,
    tmp_path: Path,
    decisions: str,
    frame: str | None,
    budget_ms: int = HOOK_TIMEOUT_S * 1000,
    placed: bool = True,
) -> tuple[list[dict], RunEnd, Path]:
    work = tmp_path / "work"
    work.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700)
    source = tmp_path / "tools.json"
    source.write_text(json.dumps(CATALOGUE))
    options = RunOptions(
        kind="codex",
        prompt="write the note",
        decisions=decisions,
        credentials="none",
        model_endpoint=root,
        cwd=str(work),
        tool_surface="owned",
        catalogue=str(source),
        frame=frame,
    )
    catalogue = read_codex_catalogue(str(source)).unwrap()
    launch, planned_frame = plan_run(options, str(scratch), catalogue=catalogue).unwrap()
    materialise(launch)
    if placed:
        place_catalogue(launch, catalogue, str(source), proxy_started=False, probed=False).unwrap()
    lines = StreamLines("codex-catalogue")
    rollout = RolloutLaunch(
        program=launch.program,
        pins=PINS,
        transcript=Transcript(path=launch.rollout_copy, digest=None, bytes=None),
        hermetic=launch.hermetic,
    )
    outcome = drive_app_server(
        launch=launch,
        desk=open_desk(decisions, planned_frame, budget_ms),
        rollout=rollout,
        run="codex-catalogue",
        catalogue=catalogue,
        model=None,
        write_event=lines.write,
        commands=None,
        on_steering_refusal=lambda line: None,
    )
    return well_formed(bytes(lines.lines).splitlines(keepends=True)), outcome, work


def owned_call(events: list[dict]) -> dict:
    (call,) = [e for e in of(events, "tool.requested") if e["seam"] == "owned_tool"]
    return call


def code_mode_gap(events: list[dict]) -> None:
    """At the pin the entry is reached through code mode's ``exec``: that call reaches no seam, is
    recorded on seam ``none`` and named by a ``COVERAGE_GAP`` (docs/adapters/codex.md)."""
    (host,) = [e for e in of(events, "tool.requested") if e["name"] == "exec"]
    assert host["seam"] == "none" and host["decision_required"] is False
    assert any(w["code"] == "COVERAGE_GAP" and host["call_id"] in w["message"] for w in of(events, "warning"))


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_a_frame_allowed_catalogue_write_lands_through_the_catalogue_server(emulator: str, tmp_path: Path):
    frame = sealed_frame(tmp_path, ["file.write"], [{"subject": "file:**", "operations": [{"op": "file.write"}]}])
    events, outcome, work = catalogue_run(emulator, tmp_path, "frame", frame)
    call = owned_call(events)
    assert call["name"] == "write_note" and call["input"] == {"path": "note.md", "text": "written by the emulator\n"}
    assert call["operations"] == ["file.write"] and call["subjects"] == ["file:note.md"]
    assert events.index(of(events, "session.started")[0]) < events.index(call)
    decision = decided(events, call["call_id"])
    assert decision["decision"] == {"decision": "allow"} and decision["decided_by"] == "frame"
    assert (work / "note.md").read_text() == "written by the emulator\n"
    code_mode_gap(events)
    assert census(events)["by_seam"] == {"owned_tool": 1} and census(events)["allowed"] == 1
    started = of(events, "session.started")[0]
    assert started["harness_version"] == "0.171.0" and started["cwd"] == str(work)
    assert outcome.reason == "completed" and outcome.process == Exited(code=0)


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_a_frame_denied_catalogue_write_performs_nothing_and_the_model_reads_the_reason(emulator: str, tmp_path: Path):
    events, outcome, work = catalogue_run(emulator, tmp_path, "frame", sealed_frame(tmp_path, ["file.read"]))
    call = owned_call(events)
    decision = decided(events, call["call_id"])
    assert decision["decided_by"] == "frame" and decision["seam"] == "owned_tool"
    reason = decision["decision"]["reason"]
    assert reason.startswith('this step admits ["file.read"] and write_note is file.write')
    assert not (work / "note.md").exists()
    (result,) = [e for e in of(events, "tool.result") if e["call_id"] != call["call_id"]]
    assert any(reason in item["text"] for item in result["content"])
    assert census(events)["denied"] == 1
    assert outcome.reason == "completed"


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_without_a_frame_the_call_is_abstained_and_the_app_server_conversation_is_retained(
    emulator: str, tmp_path: Path
):
    events, _, work = catalogue_run(emulator, tmp_path, "frame", None)
    decision = decided(events, owned_call(events)["call_id"])
    assert decision["decision"] == {"decision": "abstain"} and decision["decided_by"] == "adapter"
    assert [w["code"] for w in of(events, "warning")].count("NO_FRAME_IN_FORCE") == 1
    assert (work / "note.md").exists()
    conversation = [
        json.loads(line) for line in (tmp_path / "scratch" / "rollout.stdout.jsonl").read_bytes().splitlines()
    ]
    assert any(m.get("method") == "item/tool/call" for m in conversation)
    assert any(m.get("method") == "turn/completed" for m in conversation)


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_an_unanswered_asked_call_is_denied_by_the_deadline_and_nothing_is_written(emulator: str, tmp_path: Path):
    """A desk whose vendor budget is 4 s (deadline 2 s, half of it): the app-server waits on the item/tool/call
    until metaharness's own deadline denies it (docs/decisions.md#deadlines covers item/tool/call)."""
    events, outcome, work = catalogue_run(emulator, tmp_path, "ask", None, budget_ms=4_000)
    call = owned_call(events)
    assert call["decision_required"] is True and call["deadline_ms"] == 2000
    decision = decided(events, call["call_id"])
    assert decision["decided_by"] == "deadline" and decision["latency_ms"] >= 2000
    assert not (work / "note.md").exists()
    assert outcome.reason == "completed"


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_an_allowed_call_whose_catalogue_server_is_gone_is_answered_as_a_failure_at_once(emulator: str, tmp_path: Path):
    """No scratch copy: ``mcp-serve`` refuses at start (catalogue-unreadable), so the allowed call is
    answered as a failure instead of leaving the app-server waiting."""
    events, outcome, work = catalogue_run(emulator, tmp_path, "observe", None, placed=False)
    call = owned_call(events)
    assert decided(events, call["call_id"])["decision"] == {"decision": "allow"}
    assert not (work / "note.md").exists()
    (result,) = [e for e in of(events, "tool.result") if e["call_id"] != call["call_id"]]
    assert any("the catalogue server ended before it answered" in item["text"] for item in result["content"])
    assert outcome.reason == "completed"
