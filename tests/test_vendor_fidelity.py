"""What the pinned CLIs really do, governed and told truthfully (docs/vendor-facts.md): ``metaharness
run`` as a real process with Claude Code 2.1.332 and Codex 0.171.0 against ``b10x-emulator``
scenarios that script each case, in a throwaway HOME whose ``.local/bin`` links the pinned CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.emulator import running_emulator
from helpers.frames import frame_skeleton
from vendor_cli import pinned_cli

from metaharness.pure.emulator.request import read_request, wire_of
from metaharness.pure.emulator.scenarios import SUB_AGENT_LINE
from metaharness.pure.events import read_event
from metaharness.pure.frames import frame_document, seal_frame

METAHARNESS = str(Path(sys.executable).with_name("metaharness"))
CLAUDE = pinned_cli("claude")
CODEX = pinned_cli("codex")
needs_claude = pytest.mark.skipif(CLAUDE is None, reason="the pinned Claude Code is not installed")
needs_codex = pytest.mark.skipif(CODEX is None, reason="the pinned Codex CLI is not installed")
CATALOGUE = {
    "format": "metaharness.catalogue/1",
    "entries": [{"name": "write_note", "description": "Write one note.", "performs": "file_write",
                 "input": {"path": {"type": "string", "required": True}, "text": {"type": "string", "required": True}}}],
}  # fmt: skip


class Run:
    """One ``metaharness run KIND`` in ``tmp_path``: a throwaway HOME, a ``work`` directory, the
    emulator's record of every request with its body."""

    def __init__(self, tmp_path: Path, kind: str) -> None:
        self.tmp_path = tmp_path
        self.kind = kind
        self.home = tmp_path / "home"
        self.work = tmp_path / "work"
        self.record = tmp_path / "emulator.jsonl"
        (self.home / ".local" / "bin").mkdir(parents=True)
        program = CLAUDE if kind == "claude" else CODEX
        assert program is not None
        (self.home / ".local" / "bin" / kind).symlink_to(os.path.realpath(program))
        self.work.mkdir()

    def frame(self, *operations: str) -> str:
        raw = frame_skeleton("fidelity", "n", "s", operations=[{"op": op} for op in operations])  # fmt: skip
        path = self.tmp_path / "step.frame.json"
        path.write_bytes(frame_document(seal_frame(raw).unwrap()))
        return str(path)

    def start(self, scenario: str, *options: str) -> tuple[subprocess.Popen[bytes], Any]:
        emulator = running_emulator("--scenario", scenario, "--record", str(self.record), "--record-bodies")
        base_url, _ = emulator.__enter__()
        argv = [METAHARNESS, "run", self.kind, "-p", "do the task", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "--cwd", str(self.work), *options]  # fmt: skip
        env = {"HOME": str(self.home), "PATH": os.environ["PATH"]}
        process = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return process, emulator

    def finish(self, scenario: str, *options: str) -> tuple[list[dict[str, Any]], int, str]:
        process, emulator = self.start(scenario, *options)
        try:
            out, err = process.communicate(b"", timeout=180)
        finally:
            emulator.__exit__(None, None, None)
        return stream(out.splitlines()), process.returncode, err.decode()

    def requests(self) -> list[Any]:
        """Each recorded request as the emulator read it."""
        lines = [json.loads(line) for line in self.record.read_text().splitlines()]
        return [read_request(wire_of(line["path"]), line["body"]) for line in lines if isinstance(line["body"], dict)]


def stream(lines: list[bytes]) -> list[dict[str, Any]]:
    """Every line an event, seq 1..n, one ``stream.closed`` last counting the rest."""
    for number, line in enumerate(lines, start=1):
        assert read_event(line).unwrap().seq == number
    events = [json.loads(line) for line in lines]
    assert [e["event"] for e in events].count("stream.closed") == 1 and events[-1]["event"] == "stream.closed"
    return events


def of(events: list[dict[str, Any]], event: str, **fields: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == event and all(e.get(k) == v for k, v in fields.items())]


def warnings(events: list[dict[str, Any]]) -> list[str]:
    return [e["code"] for e in of(events, "warning")]


@needs_claude
def test_claude_agent_is_admitted_by_a_frame_admitting_subagent_spawn_and_the_sub_agent_is_governed(tmp_path: Path):
    run = Run(tmp_path, "claude")
    events, code, err = run.finish("claude-agent", "--frame", run.frame("subagent.spawn", "shell"))
    (agent,) = of(events, "tool.requested", name="Agent")
    assert (agent["seam"], agent["operations"]) == ("hook", ["subagent.spawn"])
    assert of(events, "tool.decided", call_id=agent["call_id"])[0]["decision"] == {"decision": "allow"}
    (line,) = of(events, "tool.requested", name="Bash")
    assert line["call_id"] != agent["call_id"] and line["seam"] == "hook" and line["input"]["command"] == SUB_AGENT_LINE
    assert of(events, "tool.decided", call_id=line["call_id"])[0]["decided_by"] == "frame"
    assert of(events, "tool.result", call_id=line["call_id"])[0]["content"] == "from-the-sub-agent"
    assert "UNCOVERED_TOOL" not in warnings(events) and "RESULT_UNOBSERVED" not in warnings(events)
    assert events[-1]["reason"] == "completed" and code == 0, err


@needs_claude
def test_claude_agent_outside_the_frame_is_denied_by_operation_not_as_uncovered(tmp_path: Path):
    run = Run(tmp_path, "claude")
    events, _, _ = run.finish("claude-agent", "--frame", run.frame("shell"))
    (agent,) = of(events, "tool.requested", name="Agent")
    decided = of(events, "tool.decided", call_id=agent["call_id"])[0]
    assert decided["decision"]["reason"].startswith('this step admits ["shell"] and Agent is subagent.spawn')
    assert "UNCOVERED_TOOL" not in warnings(events) and not of(events, "tool.requested", name="Bash")
    assert of(events, "tool.result", call_id=agent["call_id"])[0]["is_error"] is True


@pytest.mark.parametrize(("kind", "scenario"), [
    pytest.param("claude", "claude-write", marks=needs_claude), pytest.param("codex", "codex-patch", marks=needs_codex)])
def test_a_reasonless_deny_is_answered_malformed_and_the_call_stays_open(kind: str, scenario: str, tmp_path: Path):
    run = Run(tmp_path, kind)
    process, emulator = run.start(scenario, "--decisions", "ask")
    assert process.stdin is not None and process.stdout is not None
    try:
        lines: list[bytes] = []
        for line in iter(process.stdout.readline, b""):
            lines.append(line)
            event = json.loads(line)
            if event["event"] == "tool.requested" and event["decision_required"]:
                command = {"format": "metaharness.command/1", "id": "d1", "command": "tool.decide",
                           "call_id": event["call_id"], "decision": {"decision": "deny"}}  # fmt: skip
                process.stdin.write(json.dumps(command).encode() + b"\n")
                process.stdin.flush()
            if event["event"] == "command.result" and event["id"] == "d1":
                command = {**command, "id": "d2", "decision": {"decision": "deny", "reason": "not in this step"}}
                process.stdin.write(json.dumps(command).encode() + b"\n")
                process.stdin.close()
        process.wait(timeout=120)
    finally:
        emulator.__exit__(None, None, None)
    events = stream(lines)
    first, second = of(events, "command.result")
    assert first["id"] == "d1" and first["outcome"]["refused"]["code"] == "MALFORMED"
    assert first["outcome"]["refused"]["reason"].startswith("malformed tool.decide: ")
    decided = of(events, "tool.decided")
    assert len(decided) == 1 and decided[0]["decided_by"] == "embedder"
    assert decided[0]["decision"] == {"decision": "deny", "reason": "not in this step"}
    assert events.index(first) < events.index(decided[0]) < events.index(second)
    assert not (run.work / "note.md").exists()
    assert process.stderr is not None and b"the steering line was refused: malformed tool.decide" in process.stderr.read()


@needs_claude
def test_an_api_failure_claude_reports_as_success_closes_as_error(tmp_path: Path):
    run = Run(tmp_path, "claude")
    events, code, _ = run.finish("failed", "--decisions", "observe")
    ended = of(events, "session.ended")[0]
    assert (ended["is_error"], ended["subtype"]) == (True, "success")
    assert events[-1]["reason"] == "error" and code == 3


@needs_codex
@pytest.mark.parametrize("confine", ["on", "off"])
def test_codex_skills_in_home_and_cwd_are_reported_and_make_h2_unavailable(tmp_path: Path, confine: str):
    """Unconfined, Codex loads the home and the working directory's skills; confined, the caller's home
    is an empty tmpfs in its view, so only the working directory's skill is loaded and reported."""
    run = Run(tmp_path, "codex")
    planted = {}
    for root, name in ((run.home, "home-skill"), (run.work, "cwd-skill")):
        skill = root / ".agents" / "skills" / name / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(f"---\nname: {name}\ndescription: the planted {name} marker\n---\nbody\n")
        planted[name] = str(skill)
    loaded = ["cwd-skill"] if confine == "on" else ["home-skill", "cwd-skill"]
    events, code, err = run.finish("text", "--decisions", "observe", "--confine", confine)
    hermetic = of(events, "session.started")[0]["hermetic"]
    assert [entry for entry in hermetic["ambient_inputs"] if "SKILL.md" in entry] == [
        f"codex skill loaded into the model's instructions: {planted[name]}" for name in loaded]
    (h2,) = [row for row in hermetic["unavailable"] if row["row"] == "H2"]
    assert [name for name, path in planted.items() if path in h2["why"]] == loaded
    assert not [row for row in hermetic["imposed"] if row["row"] == "H2"]
    instructions = " ".join(view.instruction_text or "" for view in run.requests())
    assert [name for name in planted if f"the planted {name} marker" in instructions] == loaded
    assert code == 0, err


@needs_codex
def test_codex_sub_agent_calls_reach_the_hook_and_every_call_ends(tmp_path: Path):
    run = Run(tmp_path, "codex")
    events, code, err = run.finish("codex-spawn-agent", "--decisions", "observe")
    (spawn,) = of(events, "tool.requested", name="collaborationspawn_agent")
    assert spawn["seam"] == "hook" and of(events, "tool.result", call_id=spawn["call_id"])
    (line,) = of(events, "tool.requested", name="Bash")
    assert line["seam"] == "hook" and line["input"] == {"command": SUB_AGENT_LINE}
    (host,) = of(events, "tool.requested", call_id="call_b10x_101")
    assert host["name"] == "exec" and of(events, "tool.result", call_id="call_b10x_101")
    (nested,) = of(events, "tool.result", call_id=line["call_id"])
    assert nested["is_error"] is False and nested["outcome_source"] == "retained_tool_completion"
    assert "RESULT_UNOBSERVED" not in warnings(events) and code == 0, err


@needs_codex
def test_app_server_spawn_agent_is_a_coverage_gap_and_the_sub_agent_calls_are_in_the_stream(tmp_path: Path):
    run = Run(tmp_path, "codex")
    source = tmp_path / "tools.json"
    source.write_text(json.dumps(CATALOGUE))
    events, code, err = run.finish("codex-spawn-agent", "--decisions", "observe", "--tool-surface", "owned",
                                   "--catalogue", str(source))  # fmt: skip
    (spawn,) = of(events, "tool.requested", name="spawn_agent")
    assert spawn["seam"] == "none"
    gaps = [e["message"] for e in of(events, "warning", code="COVERAGE_GAP")]
    assert any(spawn["call_id"] in message for message in gaps)
    (host,) = of(events, "tool.requested", call_id="call_b10x_101")
    assert host["name"] == "exec" and any("call_b10x_101" in message for message in gaps)
    assert of(events, "tool.result", call_id="call_b10x_101")
    offered = {name for view in run.requests() for tool in view.tools for name in (tool.name, *tool.nested)}
    assert "spawn_agent" in offered and "view_image" not in offered
    assert "RESULT_UNOBSERVED" not in warnings(events) and code == 0, err


@needs_codex
def test_codex_shell_call_in_another_directory_keeps_its_workdir(tmp_path: Path):
    run = Run(tmp_path, "codex")
    (run.work / "sub").mkdir()
    events, code, err = run.finish("codex-workdir", "--decisions", "observe")
    (call,) = of(events, "tool.requested", name="Bash")
    assert call["input"] == {"command": "pwd", "workdir": str(run.work / "sub")} and call["subjects"] == ["proc:pwd"]
    assert code == 0, err


@needs_claude
def test_tool_search_is_admitted_so_a_deferred_tool_is_decided_by_what_it_does(tmp_path: Path):
    run = Run(tmp_path, "claude")
    events, code, err = run.finish("claude-tool-search", "--frame", run.frame("file.read"))
    (search,) = of(events, "tool.requested", name="ToolSearch")
    assert "operations" not in search and search["seam"] == "hook"
    assert of(events, "tool.decided", call_id=search["call_id"])[0]["decision"] == {"decision": "allow"}
    (fetch,) = of(events, "tool.requested", name="WebFetch")
    assert fetch["operations"] == ["web.read"]
    reason = of(events, "tool.decided", call_id=fetch["call_id"])[0]["decision"]["reason"]
    assert reason.startswith('this step admits ["file.read"] and WebFetch is web.read')
    assert "UNCOVERED_TOOL" not in warnings(events) and code == 0, err
