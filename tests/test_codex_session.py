"""The pure codex session: one ``tool.requested`` per call, hook answers and performed calls resumed in
stamp order, lost answers, a turn's end, commands, the app-server's owned calls and the wind-up."""

from __future__ import annotations

import json
from typing import Any

from helpers.frames import frame_skeleton

from metaharness.pure.catalogue import load_catalogue
from metaharness.pure.codex import app_server
from metaharness.pure.codex.app_server import Note, Perform, Send
from metaharness.pure.codex.replay import replay_launch
from metaharness.pure.codex.session import (
    Effect,
    Session,
    delivered,
    end_of_record,
    hook_request,
    open_session,
    read_catalogue_server,
    read_line,
    read_server,
    request_subjects,
    server_line_subjects,
    take_command,
    wind_up,
)
from metaharness.pure.commands import read_command
from metaharness.pure.decisions import Arm, open_desk
from metaharness.pure.events import EventValue, Exited, Stream
from metaharness.pure.frames import Frame, seal_frame
from metaharness.pure.hook_channel import HOOK_GAVE_UP, HookAnswer
from metaharness.pure.jsonline import compact
from metaharness.pure.stream_writer import write_line
from metaharness.pure.subjects import TreeFacts

TREE = TreeFacts("/w", {})
ROLLOUT = replay_launch(decisions="frame", hermetic="off", transcript_path="rollout.jsonl")
TURN = "turn-1"


def rollout_line(kind: str, payload: dict[str, Any]) -> bytes:
    return compact({"timestamp": "2026-11-30T01:00:00.000Z", "type": kind, "payload": payload})


META = rollout_line("session_meta", {"id": "s-1", "cwd": "/w", "cli_version": "0.171.0"})
STARTED = rollout_line("event_msg", {"type": "task_started", "turn_id": TURN})
CALL = rollout_line(
    "response_item", {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "ls"}', "call_id": "c1"}
)
OUTPUT = rollout_line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"})
COMPLETE = rollout_line("event_msg", {"type": "task_complete", "turn_id": TURN, "last_agent_message": "done"})
REQUEST = compact({"tool_use_id": "c1", "tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/w"})
CATALOGUE = load_catalogue(
    compact(
        {"format": "metaharness.catalogue/1", "entries": [{"name": "read_note", "description": "Read a note.",
         "performs": "file_read", "input": {"path": {"type": "string", "required": True}}}]}
    ),
    "catalogue.json",
).unwrap()  # fmt: skip


def frame(*operations: str) -> Frame:
    return seal_frame(
        frame_skeleton(operations=[{"op": op} for op in operations])
    ).unwrap()  # fmt: skip


class Harness:
    """Drives a session as the shell does: hook answers and performed calls are delivered (or lost)."""

    def __init__(self, mode: str = "frame", frame_in_force: Frame | None = None, catalogue: bool = False) -> None:
        desk = open_desk(mode, frame_in_force, 60_000)  # type: ignore[arg-type]
        self.session: Session
        self.stream = Stream("golden")
        if catalogue:
            conversation, opening = app_server.open_session(
                version="1", cwd="/w", model=None, sandbox="read-only", catalogue=CATALOGUE, user_turn="go"
            )
            self.session, effects = open_session(desk, ROLLOUT, "golden", TREE, CATALOGUE, conversation, opening)
        else:
            self.session, effects = open_session(desk, ROLLOUT, "golden", TREE)
        self.delivered = True
        self.lines: list[dict[str, Any]] = []
        self.hook_answers: list[tuple[str, bytes]] = []
        self.performed: list[bytes] = []
        self.sent: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.armed: list[str] = []
        self.number = 0
        self.perform(effects)

    def perform(self, effects: tuple[Effect, ...]) -> None:
        for effect in effects:
            if isinstance(effect, EventValue):
                self.stream, line = write_line(self.stream, effect)
                self.lines.append(json.loads(line))
            elif isinstance(effect, HookAnswer):
                self.hook_answers.append((effect.key, effect.body))
                self.session, more = delivered(self.session, self.delivered)
                self.perform(more)
            elif isinstance(effect, Perform):
                self.performed.append(effect.line)
                self.session, more = delivered(self.session, self.delivered)
                self.perform(more)
            elif isinstance(effect, Send):
                self.sent.append(json.loads(effect.line))
            elif isinstance(effect, Note):
                self.notes.append(effect.text)
            elif isinstance(effect, Arm):
                self.armed.append(effect.call_id)

    def line(self, raw: bytes) -> None:
        self.number += 1
        self.session, effects = read_line(self.session, self.number, raw)
        self.perform(effects)

    def hook(self, key: str, raw: bytes | None = REQUEST) -> None:
        self.session, effects = hook_request(self.session, key, raw)
        self.perform(effects)

    def server(self, message: dict[str, Any]) -> None:
        self.session, effects = read_server(self.session, compact(message))
        self.perform(effects)

    def command(self, text: str) -> str | None:
        self.session, effects, control = take_command(self.session, read_command(text.encode()).unwrap(), 7)
        self.perform(effects)
        return control

    def close(self, halted: bool = False) -> str:
        self.session, effects = end_of_record(self.session)
        self.perform(effects)
        self.session, effects, reason = wind_up(
            self.session, stderr_tail=b"", halted=halted, killed=False, process=Exited(code=0)
        )
        self.perform(effects)
        assert [line["seq"] for line in self.lines] == list(range(1, len(self.lines) + 1))
        return reason

    def events(self) -> list[str]:
        return [line["event"] for line in self.lines]


def test_record_first_holds_until_the_hook_and_the_answer_goes_to_its_key() -> None:
    run = Harness(frame_in_force=frame("shell"))
    for raw in (META, STARTED, CALL):
        run.line(raw)
    assert run.events() == ["session.started", "turn.started"]
    run.hook("K1")
    assert run.events()[2:] == ["tool.requested", "tool.decided"]
    assert run.lines[2]["seam"] == "hook" and run.hook_answers == [("K1", b"")]
    run.line(OUTPUT)
    run.line(COMPLETE)
    assert run.close() == "completed"
    assert run.events()[-3:] == ["turn.ended", "session.ended", "stream.closed"]
    assert run.events().count("tool.requested") == 1
    assert run.lines[-2]["census"]["allowed"] == 1


def nested_completion(call_id: str, exit_code: int) -> bytes:
    item = {"type": "CommandExecution", "id": call_id, "status": "completed", "aggregated_output": "out\n",
            "exit_code": exit_code}  # fmt: skip
    return rollout_line("event_msg", {"type": "item_completed", "turn_id": TURN, "item": item})


def test_a_nested_call_s_completion_is_the_result_of_the_hook_call_with_its_id_and_no_other() -> None:
    run = Harness(frame_in_force=frame("shell"))
    for raw in (META, STARTED):
        run.line(raw)
    for key, call_id in (("K1", "exec-1"), ("K2", "exec-2")):
        run.hook(key, compact({"tool_use_id": call_id, "tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/w"}))
    run.line(nested_completion("exec-1", 0))
    run.line(nested_completion("exec-unknown", 0))
    run.line(nested_completion("exec-2", 2))
    run.line(nested_completion("exec-1", 0))
    results = [line for line in run.lines if line["event"] == "tool.result"]
    assert [(r["call_id"], r["is_error"], r["exit_code"]) for r in results] == [("exec-1", False, 0), ("exec-2", True, 2)]
    assert results[0]["content"] == "out\n" and results[0]["outcome_source"] == "retained_tool_completion"
    assert "_at" not in results[0]["tool_use_result"] and "_turn_id" not in results[0]["tool_use_result"]


def test_an_answer_no_hook_waited_for_is_a_deny_by_deadline_counted_as_such() -> None:
    run = Harness(frame_in_force=frame("file.read"))
    run.delivered = False
    run.line(META)
    run.hook("K1")
    decided = run.lines[-1]
    assert decided["event"] == "tool.decided" and decided["decided_by"] == "deadline"
    assert decided["decision"] == {"decision": "deny", "reason": HOOK_GAVE_UP}
    assert run.session.census.by_decider == {"deadline": 1}
    assert b"this step admits" in run.hook_answers[0][1]


def test_a_missing_request_file_is_a_coverage_gap() -> None:
    run = Harness()
    run.hook("Missing1", None)
    assert run.lines[0]["code"] == "COVERAGE_GAP" and "Missing1" in run.lines[0]["message"]


def test_the_turn_ending_abandons_a_call_still_asked() -> None:
    run = Harness(mode="ask")
    for raw in (META, STARTED):
        run.line(raw)
    run.hook("K1")
    assert run.armed == ["c1"] and run.session.desk.pending_call_ids() == ("c1",)
    run.line(COMPLETE)
    assert run.events()[-3:] == ["turn.ended", "tool.decided", "warning"]
    assert run.lines[-2]["decided_by"] == "adapter" and run.lines[-1]["code"] == "PENDING_CALL_ABANDONED"


def test_a_replacement_codex_cannot_run_is_refused_and_the_call_stays_asked() -> None:
    run = Harness(mode="ask")
    run.line(META)
    run.hook("K1")
    command = {"format": "metaharness.command/1", "command": "tool.decide", "id": "d1", "call_id": "c1",
               "decision": {"decision": "replace", "input": {"cmd": "ls"}}}  # fmt: skip
    assert run.command(json.dumps(command)) is None
    refused = run.lines[-1]
    assert refused["event"] == "command.result" and refused["outcome"]["refused"]["code"] == "MALFORMED"
    assert run.session.desk.pending_call_ids() == ("c1",)


def test_halt_abandons_first_then_acknowledges_and_no_terminal_record_follows() -> None:
    run = Harness(mode="ask")
    run.line(META)
    run.hook("K1")
    assert run.command('{"format":"metaharness.command/1","command":"halt","id":"h1","reason":"stop"}') == "halt"
    assert run.events()[-3:] == ["tool.decided", "warning", "command.result"]
    assert run.hook_answers[-1][0] == "K1"
    assert run.close(halted=True) == "steer-halt"
    assert "NO_TERMINAL_RECORD" not in [line.get("code") for line in run.lines]


def test_no_task_complete_closes_with_no_terminal_record_and_error() -> None:
    run = Harness()
    run.line(META)
    assert run.close() == "error"
    assert run.lines[-2]["code"] == "NO_TERMINAL_RECORD"


def open_thread(run: Harness) -> None:
    run.server({"id": 0, "result": {}})
    run.server({"id": 1, "result": {"thread": {"id": "t1"}}})
    run.server({"id": 2, "result": {}})


def test_an_owned_call_is_decided_on_owned_tool_and_performed_by_the_catalogue_server() -> None:
    run = Harness(frame_in_force=frame("file.read"), catalogue=True)
    assert run.sent[0]["method"] == "initialize"
    open_thread(run)
    run.line(META)
    run.server({"id": 7, "method": "item/tool/call", "params": {"callId": "o1", "tool": "read_note",
                                                                 "arguments": {"path": "n.md"}}})  # fmt: skip
    requested = run.lines[-2]
    assert requested["event"] == "tool.requested" and requested["seam"] == "owned_tool"
    assert json.loads(run.performed[0])["params"] == {"name": "read_note", "arguments": {"path": "n.md"}}
    answer = {"jsonrpc": "2.0", "id": 0, "result": {"content": [{"type": "text", "text": "hi"}], "isError": False}}
    run.session, effects = read_catalogue_server(run.session, compact(answer))
    run.perform(effects)
    assert run.sent[-1] == {"id": 7, "result": {"contentItems": [{"type": "inputText", "text": "hi"}], "success": True}}
    run.server({"method": "turn/completed", "params": {"threadId": "t1"}})
    assert run.session.finished


def test_a_call_the_catalogue_server_cannot_take_is_answered_as_a_failure() -> None:
    run = Harness(frame_in_force=frame("file.read"), catalogue=True)
    open_thread(run)
    run.delivered = False
    run.server({"id": 7, "method": "item/tool/call", "params": {"callId": "o1", "tool": "read_note",
                                                                 "arguments": {"path": "n.md"}}})  # fmt: skip
    assert run.sent[-1]["id"] == 7 and run.sent[-1]["result"]["success"] is False
    assert run.session.catalogued is not None and run.session.catalogued.catalogue_gone
    assert not run.session.finished


def test_an_owned_call_s_subjects_resolve_through_the_links_the_shell_found() -> None:
    run = Harness(frame_in_force=frame("file.read"), catalogue=True)
    open_thread(run)
    line = compact({"id": 7, "method": "item/tool/call",
                    "params": {"callId": "o1", "tool": "read_note", "arguments": {"path": "n.md"}}})  # fmt: skip
    assert server_line_subjects(run.session, line) == ("file:n.md",)
    tree = TreeFacts("/w", {"/w/n.md": "/elsewhere/n.md"})
    run.session, effects = read_server(run.session, line, tree)
    run.perform(effects)
    requested = next(event for event in run.lines if event["event"] == "tool.requested")
    assert requested["subjects"] == ["file:/elsewhere/n.md"]


def test_a_hook_call_s_subjects_resolve_through_the_links_the_shell_found() -> None:
    patch = "*** Begin Patch\n*** Add File: notes/a.md\n+x\n*** End Patch\n"
    raw = compact({"tool_use_id": "c1", "tool_name": "apply_patch", "tool_input": {"command": patch}, "cwd": "/w"})
    assert request_subjects("K1", raw) == ("file:notes/a.md",)
    run = Harness(frame_in_force=frame("file.write"))
    run.session, effects = hook_request(run.session, "K1", raw, TreeFacts("/w", {"/w/notes": "/w/docs"}))
    run.perform(effects)
    assert run.lines[0]["subjects"] == ["file:docs/a.md"]


def test_a_server_line_nested_past_the_bound_names_no_subjects_and_is_noted() -> None:
    run = Harness(frame_in_force=frame("file.read"), catalogue=True)
    line = b"[" * 100_000 + b"]" * 100_000
    assert server_line_subjects(run.session, line) == ()
    run.session, effects = read_server(run.session, line)
    run.perform(effects)
    assert run.notes == [f"codex app-server wrote a line that is not JSON ({len(line)} bytes)"]
