"""Every call presented on a deciding seam gets exactly one ``tool.decided``, whatever the interleaving
of decide commands, expiries, abandonment, frame changes and repeats (docs/events.md#the-twenty-events;
docs/decisions.md#modes, #admission, #correlation-and-abandonment, #deadlines)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from metaharness.pure.admission import admit_call
from metaharness.pure.commands import ToolDecide, command_ok, frame_set_ok, too_late, unknown_call
from metaharness.pure.decisions import (
    MUTATED_DENY,
    NO_FRAME_IN_FORCE,
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
    request_digest,
    set_frame,
)
from metaharness.pure.events import (
    Abstain,
    Allow,
    CommandResult,
    Deny,
    Replace,
    ToolDecided,
    ToolRequested,
    WarningRaised,
)
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


class ReferenceDesk:
    """The desk as docs/decisions.md states it, with a flat list of correlation keys scanned on every input
    (docs/decisions.md#modes, #admission, #correlation-and-abandonment, #deadlines): the model the indexed desk must
    agree with, effect for effect."""

    def __init__(self, mode: Any, frame: Frame | None) -> None:
        self.mode = mode
        self.frame = frame
        self.staged: Frame | None = None
        self.keys: list[dict[str, Any]] = []
        self.warned = False
        self.decided = 0

    def requested(self, call: PresentedCall, required: bool) -> Emit:
        operations = tuple(dict.fromkeys(operation.op for operation in call.operations))
        return Emit(
            ToolRequested(
                call_id=call.call_id,
                name=call.name,
                input=call.input,
                operations=operations or UNSET,
                subjects=call.subjects or UNSET,
                decision_required=required,
                deadline_ms=25000 if required else None,
                seam=call.seam,
            )
        )

    def close(self, key: dict[str, Any], decision: Any, by: str, latency: int | None, seam: str) -> list[Effect]:
        self.keys.remove(key)
        self.keys.append({**key, "status": "closed", "decision": decision})
        self.decided += 1
        answer = Answer(key["call_id"], decision, key["seam"])
        return [answer, Emit(ToolDecided(call_id=key["call_id"], decision=decision, decided_by=by, seam=seam, latency_ms=latency))]

    def store(self, key: dict[str, Any]) -> None:
        self.keys = [k for k in self.keys if (k["call_id"], k["digest"]) != (key["call_id"], key["digest"])] + [key]

    def present(self, call: PresentedCall) -> list[Effect]:
        digest = request_digest(call.call_id, call.name, call.input)
        same = next((k for k in self.keys if (k["call_id"], k["digest"]) == (call.call_id, digest)), None)
        deciding = call.seam != "none"
        key = {"call_id": call.call_id, "digest": digest, "seam": call.seam, "status": "pending", "decision": None}
        if same is not None and not (same["status"] == "recorded" and deciding):
            if same["status"] == "pending" and deciding:
                return [self.requested(call, True)]
            again = [Answer(call.call_id, same["decision"], call.seam)] if same["decision"] and deciding else []
            return [self.requested(call, False), *again]
        if any(k["call_id"] == call.call_id and k["digest"] != digest for k in self.keys):
            mutated = [self.requested(call, False), Emit(WarningRaised(code="REQUEST_MUTATED", message=MUTATED_MESSAGE % call.call_id))]
            self.store({**key, "status": "recorded" if not deciding else "pending"})
            if not deciding:
                return mutated
            return mutated + self.close(self.keys[-1], Deny(MUTATED_DENY), "adapter", None, call.seam)
        if not deciding:
            self.store({**key, "status": "recorded"})
            return [self.requested(call, False)]
        self.store(key)
        if self.mode == "observe":
            return [self.requested(call, False), *self.close(key, Allow(), "observe", None, call.seam)]
        if self.mode == "frame" and self.frame is None:
            warned = [] if self.warned else [Emit(WarningRaised(code="NO_FRAME_IN_FORCE", message=NO_FRAME_IN_FORCE))]
            self.warned = True
            return [self.requested(call, False), *warned, *self.close(key, Abstain(), "adapter", None, "none")]
        if self.frame is not None:
            admission = admit_call(self.frame, call.name, call.operations, call.subjects, catalogue_question=call.catalogue_question)
            if self.mode == "frame" or isinstance(admission.decision, Deny):
                warned = [] if admission.warning is None else [Emit(admission.warning)]
                return [self.requested(call, False), *warned, *self.close(key, admission.decision, "frame", None, call.seam)]
        return [self.requested(call, True), Arm(call.call_id, 25000)]

    def pending(self, call_id: str) -> dict[str, Any] | None:
        return next((k for k in self.keys if k["call_id"] == call_id and k["status"] == "pending"), None)

    def decide(self, command: ToolDecide, elapsed: int) -> list[Effect]:
        key = self.pending(command.call_id)
        if key is None:
            closed = any(k["call_id"] == command.call_id and k["status"] == "closed" for k in self.keys)
            return [Emit((too_late if closed else unknown_call)(command.id, command.call_id))]
        return [Disarm(command.call_id), *self.close(key, command.decision, "embedder", elapsed, key["seam"]), Emit(command_ok(command.id))]

    def expire(self, call_id: str, elapsed: int) -> list[Effect]:
        key = self.pending(call_id)
        return [] if key is None else self.close(key, Deny(REASON_25000), "deadline", elapsed, key["seam"])

    def abandon(self, why: str) -> list[Effect]:
        effects: list[Effect] = []
        for key in [k for k in self.keys if k["status"] == "pending"]:
            reason = f"{why} before this call was decided, so nothing ran"
            warning = WarningRaised(code="PENDING_CALL_ABANDONED", message=f"{key['call_id']} was never decided by the embedder")
            effects += [Disarm(key["call_id"]), *self.close(key, Deny(reason), "adapter", None, key["seam"]), Emit(warning)]
        return effects

    def pending_call_ids(self) -> tuple[str, ...]:
        return tuple(k["call_id"] for k in self.keys if k["status"] == "pending")


MUTATED_MESSAGE = (
    "call %s was presented again with a different input; the correlation key is the call id plus the digest of the "
    "request as presented, so the earlier decision does not carry over"
)
REASON_25000 = (
    "metaharness's own 25000ms decision deadline expired before an answer arrived; it is strictly less than the "
    "vendor's 30000ms timeout so the refusal is metaharness's and not an ambiguity"
)
MANY_CALL_IDS = st.sampled_from([f"c{n}" for n in range(8)])
MANY_CALLS = st.builds(
    PresentedCall,
    call_id=MANY_CALL_IDS,
    name=st.sampled_from(["file_write", "run"]),
    input=st.sampled_from([{"path": "a"}, {"path": "src/b"}]),
    seam=st.sampled_from(["control_request", "none"]),
    operations=st.sampled_from([(Operation("file.write"),), (Operation("shell"),)]),
    subjects=st.sampled_from([("file:a",), ("file:src/b",)]),
)
MANY_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("present"), MANY_CALLS),
        st.tuples(st.just("decide"), MANY_CALL_IDS, st.sampled_from([Allow(), Deny("no")]), st.integers(0, 30000)),
        st.tuples(st.just("expire"), MANY_CALL_IDS, st.integers(0, 30000)),
        st.tuples(st.just("abandon"), st.sampled_from(["the turn ended", "the run was halted"])),
        st.tuples(st.just("frame.set"), FRAMES),
        st.tuples(st.just("turn"),),
    ),
    max_size=60,
)


@settings(max_examples=300)
@given(st.sampled_from(["frame", "ask", "observe"]), st.none() | FRAMES, st.one_of(STEPS, MANY_STEPS))
def test_the_indexed_desk_gives_the_effects_of_the_reference_model(
    mode: Any, initial: Frame | None, steps: list[tuple[Any, ...]]
) -> None:
    desk, model = open_desk(mode, initial), ReferenceDesk(mode, initial)
    for n, step in enumerate([*steps, ("abandon", "the stream ended")]):
        if step[0] == "present":
            desk, out = present(desk, step[1])
            expected = model.present(step[1])
        elif step[0] == "decide":
            command = ToolDecide(id=f"cmd{n}", call_id=step[1], decision=step[2])
            desk, out = decide(desk, command, step[3])
            expected = model.decide(command, step[3])
        elif step[0] == "expire":
            desk, out = expire(desk, step[1], step[2])
            expected = model.expire(step[1], step[2])
        elif step[0] == "abandon":
            desk, out = abandon(desk, step[1])
            expected = model.abandon(step[1])
        elif step[0] == "frame.set":
            desk, out = set_frame(desk, f"cmd{n}", step[1])
            model.staged, expected = step[1], [Emit(frame_set_ok(f"cmd{n}"))]
        else:
            desk, out = begin_turn(desk), ()
            model.frame, model.staged, expected = model.staged or model.frame, None, []
        assert list(out) == expected
        assert desk.pending_call_ids() == model.pending_call_ids()
        assert desk.frame == model.frame
    census = desk.census
    assert census.allowed + census.denied + census.replaced + census.abstained == model.decided
