"""Replay's state is bounded by what is open, not by the record's length (docs/events.md#replay): after many
resolved calls every per-call table holds at most two generations of ``CALL_MEMORY_LIMIT`` keys and nothing
is pending or unended; a re-used call id is still recognised inside the window and read as new past it; an
open call is never forgotten."""

from __future__ import annotations

import json
from pathlib import Path

from metaharness.pure.b10x.replay import replay_settings
from metaharness.pure.b10x.seam import SeamState, open_seam, read_line
from metaharness.pure.bounds import CALL_MEMORY_LIMIT
from metaharness.pure.call_memory import CallMemory
from metaharness.pure.claude.replay import replay_facts
from metaharness.pure.claude.seam import RecordState, map_record
from metaharness.pure.codex.replay import replay_launch
from metaharness.pure.codex.rollout import RolloutReader, read_rollout_line
from metaharness.pure.commands import ToolDecide
from metaharness.pure.decisions import Desk, Emit, PresentedCall, decide, open_desk, present
from metaharness.pure.events import Allow, Deny, Event, EventValue, Stream, ToolDecided, ToolResult, WarningRaised
from metaharness.pure.frames import Operation, seal_frame
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
CALLS = 3 * CALL_MEMORY_LIMIT


def _b10x_lines(calls: int) -> list[bytes]:
    lines = [json.dumps({"kind": "started", "model": "m"}).encode()]
    for number in range(calls):
        call_id = f"call_{number}"
        lines += [
            json.dumps({"kind": "tool-requested", "call_id": call_id, "name": "file_read", "arguments": {"path": "a"}}).encode(),
            json.dumps({"kind": "tool-completed", "call_id": call_id, "failed": False}).encode(),
        ]
    return lines


def _read_b10x(lines: list[bytes], state: SeamState | None = None) -> tuple[SeamState, list[Event]]:
    events: list[Event] = []
    if state is None:
        state, _ = open_seam(replay_settings(transcript_path="r"))
    for number, line in enumerate(lines, start=1):
        state, effects = read_line(state, number, line)
        events += [effect.payload for effect in effects if isinstance(effect, EventValue)]
    return state, events


def test_b10x_replay_holds_no_more_than_two_generations_after_many_resolved_calls() -> None:
    state, _ = _read_b10x(_b10x_lines(CALLS))
    assert len(state.desk.pending) == 0 and not state.stream.unended
    assert CALL_MEMORY_LIMIT <= len(state.desk.calls) <= 2 * CALL_MEMORY_LIMIT
    assert "call_0" not in state.desk.calls and f"call_{CALLS - 1}" in state.desk.calls


def test_a_reused_call_id_is_mutated_inside_the_window_and_new_past_it() -> None:
    state, _ = _read_b10x(_b10x_lines(CALLS))
    changed = {"kind": "tool-requested", "name": "file_read", "arguments": {"path": "b"}}
    recent = json.dumps({**changed, "call_id": f"call_{CALLS - 1}"}).encode()
    forgotten = json.dumps({**changed, "call_id": "call_0"}).encode()
    _, inside = _read_b10x([recent], state)
    _, past = _read_b10x([forgotten], state)
    assert "REQUEST_MUTATED" in _codes(inside)
    assert past and "REQUEST_MUTATED" not in _codes(past)


def _codes(events: list[Event]) -> list[str]:
    return [event.code for event in events if isinstance(event, WarningRaised)]


def test_a_pending_call_is_never_forgotten() -> None:
    desk = open_desk("ask")
    desk, _ = present(desk, PresentedCall(call_id="open", name="Bash", input={}, seam="hook"))
    for number in range(CALLS):
        desk, _ = present(desk, PresentedCall(call_id=f"c{number}", name="Bash", input={}, seam="none"))
    assert desk.pending_call_ids() == ("open",) and "open" in desk.calls
    desk, effects = present(desk, PresentedCall(call_id="open", name="Bash", input={"x": 1}, seam="hook"))
    warnings = [e.event.code for e in effects if isinstance(e, Emit) and isinstance(e.event, WarningRaised)]
    assert warnings == ["REQUEST_MUTATED"]


def test_codex_reader_keeps_its_calls_and_completions_bounded() -> None:
    lines = (VECTORS / "codex" / "record" / "shell.jsonl").read_bytes().splitlines()
    middle = lines[13:22]
    reader = RolloutReader(launch=replay_launch(decisions="observe", hermetic="off", transcript_path="r"))
    for number, line in enumerate(lines[:13], start=1):
        reader, _ = read_rollout_line(reader, line, number)
    for cycle in range(CALLS):
        for line in middle:
            fresh = line.replace(b"call_b10x_001", f"call_{cycle}".encode()).replace(b"exec-3df5", f"exec-{cycle}-".encode())
            reader, _ = read_rollout_line(reader, fresh, 14)
    assert len(reader.calls) <= 2 * CALL_MEMORY_LIMIT and len(reader.evidence) <= 2 * CALL_MEMORY_LIMIT
    assert f"call_{CALLS - 1}" in reader.calls and "call_0" not in reader.calls


def test_claude_reader_keeps_its_usage_per_message_bounded() -> None:
    lines = (VECTORS / "claude" / "record" / "bash.jsonl").read_bytes().splitlines()
    facts = replay_facts(decisions="observe", hermetic="off", transcript_path="r", harness_version=None, model=None)
    state, _ = map_record(RecordState(), lines[0], 1, facts)
    for cycle in range(CALLS):
        state, _ = map_record(state, lines[3].replace(b"msg_b10x_002", f"msg_{cycle}".encode()), 2, facts)
    assert len(state.usage_seen) <= 2 * CALL_MEMORY_LIMIT
    state, repeated = map_record(state, lines[3].replace(b"msg_b10x_002", f"msg_{CALLS - 1}".encode()), 3, facts)
    assert not [item for item in repeated if "UsageReported" in type(getattr(item, "payload", None)).__name__]


def test_call_memory_carries_open_keys_across_a_turn_of_generation() -> None:
    memory: CallMemory[int] = CallMemory(limit=3)
    for number in range(10):
        memory = memory.set(str(number), number, open_ids=("0",))
    assert memory.get("0") == 0 and memory.get("9") == 9 and memory.get("1") is None and len(memory) <= 6


def test_a_flood_of_calls_cannot_carry_a_forgotten_call_past_the_frame() -> None:
    """Hostile: a child floods calls to push a denied call out of the window, then presents it again with
    another input; the frame in force decides it afresh, so the flood buys no write."""
    frame = seal_frame({
        "workflow": {"id": "w", "version": "1"}, "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [], "obligations": [], "reaching": [], "next": [], "handoff": {"handoff": "none"},
        "operations": [{"op": "file.read"}], "entities": None,
    }).unwrap()  # fmt: skip
    desk = open_desk("frame", frame)

    def write(call_id: str, text: str) -> PresentedCall:
        return PresentedCall(call_id=call_id, name="file_write", input={"path": "n.md", "text": text},
                             seam="control_request", operations=(Operation("file.write"),), subjects=("file:n.md",))  # fmt: skip

    desk, _ = present(desk, write("w", "first"))
    for number in range(CALLS):
        desk, _ = present(desk, PresentedCall(call_id=f"c{number}", name="file_read", input={}, seam="none"))
    assert "w" not in desk.calls
    desk, effects = present(desk, write("w", "second"))
    decided = [e.event for e in effects if isinstance(e, Emit) and isinstance(e.event, ToolDecided)]
    assert len(decided) == 1 and isinstance(decided[0].decision, Deny) and decided[0].decided_by == "frame"


def test_a_flood_cannot_launder_a_denied_call_through_a_benign_input_past_the_window() -> None:
    """Hostile: a denied write runs anyway; the child floods calls to push its id out of the desk's window, then
    presents the id again with an input the frame allows and reports the write's success under it. Inside the
    window that input is REQUEST_MUTATED and denied again; past it the stream still names the id denied, so the
    success is DECISION_BYPASSED (pure/stream_amendment.py keeps the ids denied for the whole stream)."""
    frame = seal_frame({
        "workflow": {"id": "w", "version": "1"}, "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [], "obligations": [], "reaching": [], "next": [], "handoff": {"handoff": "none"},
        "operations": [{"op": "file.read"}], "entities": None,
    }).unwrap()  # fmt: skip
    desk, writer, warnings = open_desk("frame", frame), StreamWriter(Stream("r"), Amendment()), []

    def through(step: tuple[Desk, tuple[object, ...]]) -> Desk:
        nonlocal writer
        for effect in step[1]:
            if isinstance(effect, Emit):
                writer, lines = write(writer, EventValue(effect.event))
                warnings.extend(line.line.payload.code for line in lines if isinstance(line.line.payload, WarningRaised))
        return step[0]

    def call(call_id: str, name: str, op: str) -> PresentedCall:
        return PresentedCall(call_id=call_id, name=name, input={"path": "n.md"}, seam="control_request",
                             operations=(Operation(op),), subjects=("file:n.md",))  # fmt: skip

    desk = through(present(desk, call("w", "file_write", "file.write")))
    for number in range(CALLS):
        desk = through(present(desk, PresentedCall(call_id=f"c{number}", name="file_read", input={}, seam="none")))
    desk = through(present(desk, call("w", "file_read", "file.read")))
    writer, lines = write(writer, EventValue(ToolResult(exit_code=None, outcome_source=None, call_id="w",
                                                        is_error=False, content=None, bytes=None, tool_use_result=None)))  # fmt: skip
    assert [line.line.payload.code for line in lines if isinstance(line.line.payload, WarningRaised)] == ["DECISION_BYPASSED"]


def _asked_again(again_input: dict[str, str]) -> list[str]:
    """Under ask: call ``w`` is denied by the embedder, a flood pushes it out of the desk's window, it is
    presented again with ``again_input`` and the embedder allows it; then its result succeeds. The warnings
    the writer adds."""
    desk, writer, warnings = open_desk("ask"), StreamWriter(Stream("r"), Amendment()), []

    def through(step: tuple[Desk, tuple[object, ...]]) -> Desk:
        nonlocal writer
        for effect in step[1]:
            if isinstance(effect, Emit):
                writer, lines = write(writer, EventValue(effect.event))
                warnings.extend(line.line.payload.code for line in lines if isinstance(line.line.payload, WarningRaised))
        return step[0]

    def ask(decision: Allow | Deny) -> Desk:
        return through(decide(desk, ToolDecide(id="d", call_id="w", decision=decision), 1))

    desk = through(present(desk, PresentedCall(call_id="w", name="Bash", input={"command": "rm -rf x"}, seam="hook")))
    desk = ask(Deny("no"))
    for number in range(CALLS):
        desk = through(present(desk, PresentedCall(call_id=f"c{number}", name="Read", input={}, seam="none")))
    desk = through(present(desk, PresentedCall(call_id="w", name="Bash", input=again_input, seam="hook")))
    desk = ask(Allow())
    writer, lines = write(writer, EventValue(ToolResult(exit_code=0, outcome_source=None, call_id="w", is_error=False,
                                                        content=None, bytes=None, tool_use_result=None)))  # fmt: skip
    return warnings + [line.line.payload.code for line in lines if isinstance(line.line.payload, WarningRaised)]


def test_a_denied_call_asked_again_past_the_window_and_allowed_is_no_bypass() -> None:
    """Past the desk's window the same call with the same input is asked again; the embedder's allow of that very
    input lifts the earlier deny, so its success is no DECISION_BYPASSED."""
    assert _asked_again({"command": "rm -rf x"}) == []


def test_an_allow_of_another_input_past_the_window_does_not_launder_the_deny() -> None:
    """Hostile: past the window the denied id comes back with a harmless input the embedder allows, and the success
    reported under it is the denied command's: the deny holds for the whole stream, so it is DECISION_BYPASSED."""
    assert _asked_again({"command": "echo harmless"}) == ["DECISION_BYPASSED"]
