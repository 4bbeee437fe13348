"""Every call presented on a deciding seam gets exactly one ``tool.decided``, whatever the interleaving
of decide commands, expiries, abandonment, frame changes and repeats (spec 20 §2.5, §8.2–§8.5)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.commands import ToolDecide
from metaharness.pure.decisions import (
    Answer,
    Arm,
    Desk,
    Disarm,
    Effect,
    Emit,
    PresentedCall,
    abandon,
    begin_turn,
    decide,
    expire,
    open_desk,
    present,
    set_frame,
)
from metaharness.pure.events import Allow, CommandResult, Deny, Replace, ToolDecided, ToolRequested
from metaharness.pure.frames import Frame, Operation, seal_frame


def frame(operations: list[str], subjects: list[dict[str, Any]] | None) -> Frame:
    document: dict[str, Any] = {
        "workflow": {"id": "w", "version": "1"},
        "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [],
        "obligations": [],
        "reaching": [],
        "next": [],
        "handoff": {"handoff": "none"},
        "operations": [{"op": op} for op in operations],
    }
    if subjects is not None:
        document["subjects"] = subjects
    return seal_frame(document).unwrap()


FRAMES = st.sampled_from(
    [
        frame(["file.write", "file.read"], None),
        frame(["file.read", "shell"], [{"subject": "file:src/**", "operations": [{"op": "file.write"}]}, {"subject": "**", "operations": [{"op": "shell"}]}]),
        frame([], None),
    ]
)
CALL_IDS = st.sampled_from(["c1", "c2", "c3"])
CALLS = st.builds(
    PresentedCall,
    call_id=CALL_IDS,
    name=st.sampled_from(["file_write", "run", "find"]),
    input=st.sampled_from([{"path": "a"}, {"path": "src/b"}, {}]),
    seam=st.sampled_from(["control_request", "hook", "owned_tool", "none"]),
    operations=st.sampled_from([(), (Operation("file.write"),), (Operation("shell"),)]),
    subjects=st.sampled_from([(), ("file:a",), ("file:src/b",), ("proc:sh",)]),
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("present"), CALLS),
        st.tuples(st.just("decide"), CALL_IDS, st.sampled_from([Allow(), Deny("no"), Replace({"x": 1})]), st.integers(0, 30000)),
        st.tuples(st.just("expire"), CALL_IDS, st.integers(0, 30000)),
        st.tuples(st.just("abandon"), st.sampled_from(["the turn ended", "the run was interrupted", "the run was halted"])),
        st.tuples(st.just("frame.set"), FRAMES),
        st.tuples(st.just("turn"),),
    ),
    max_size=25,
)


def run(desk: Desk, steps: list[tuple[Any, ...]]) -> tuple[Desk, list[Effect], list[PresentedCall]]:
    effects: list[Effect] = []
    presented: list[PresentedCall] = []
    for n, step in enumerate(steps):
        if step[0] == "present":
            presented.append(step[1])
            desk, out = present(desk, step[1])
        elif step[0] == "decide":
            desk, out = decide(desk, ToolDecide(id=f"cmd{n}", call_id=step[1], decision=step[2]), step[3])
        elif step[0] == "expire":
            desk, out = expire(desk, step[1], step[2])
        elif step[0] == "abandon":
            desk, out = abandon(desk, step[1])
        elif step[0] == "frame.set":
            desk, out = set_frame(desk, f"cmd{n}", step[1])
        else:
            desk, out = begin_turn(desk), ()
        effects += out
    desk, out = abandon(desk, "the stream ended")
    return desk, effects + list(out), presented


def digest_key(call: PresentedCall) -> tuple[str, str, Any]:
    return (call.call_id, call.name, repr(call.input))


@settings(max_examples=400)
@given(st.sampled_from(["frame", "ask", "observe"]), st.none() | FRAMES, STEPS)
def test_every_presented_call_is_decided_exactly_once(mode: Any, initial: Frame | None, steps: list[tuple[Any, ...]]) -> None:
    desk, effects, presented = run(open_desk(mode, initial), steps)
    emitted = [effect.event for effect in effects if isinstance(effect, Emit)]
    decided = Counter(event.call_id for event in emitted if isinstance(event, ToolDecided))
    deciding_keys = {digest_key(call) for call in presented if call.seam != "none"}
    expected = Counter(key[0] for key in deciding_keys)
    assert decided == expected
    assert desk.pending_call_ids() == ()
    census = desk.census
    assert census.allowed + census.denied + census.replaced + census.abstained == sum(decided.values())
    assert sum(census.by_seam.values()) == sum(census.by_decider.values()) == sum(decided.values())


@settings(max_examples=300)
@given(st.sampled_from(["frame", "ask", "observe"]), st.none() | FRAMES, STEPS)
def test_effects_keep_their_order_and_every_command_is_answered_once(
    mode: Any, initial: Frame | None, steps: list[tuple[Any, ...]]
) -> None:
    _, effects, _ = run(open_desk(mode, initial), steps)
    requested: set[str] = set()
    armed: set[str] = set()
    for index, effect in enumerate(effects):
        if isinstance(effect, Emit) and isinstance(effect.event, ToolRequested):
            requested.add(effect.event.call_id)
        elif isinstance(effect, Emit) and isinstance(effect.event, ToolDecided):
            assert effect.event.call_id in requested
            answer = effects[index - 1]
            assert isinstance(answer, Answer) and answer.call_id == effect.event.call_id
            assert answer.decision == effect.event.decision
        elif isinstance(effect, Arm):
            assert effect.call_id in requested and effect.deadline_ms == 25000
            armed.add(effect.call_id)
        elif isinstance(effect, Disarm):
            assert effect.call_id in armed
    answered = Counter(e.event.id for e in effects if isinstance(e, Emit) and isinstance(e.event, CommandResult))
    commands = sum(1 for step in steps if step[0] in ("decide", "frame.set"))
    assert sum(answered.values()) == commands and set(answered.values()) <= {1}
