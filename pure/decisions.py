"""The decision desk: how every adapter's run loop turns presented calls into decisions (docs/decisions.md#modes,
#correlation-and-abandonment, #deadlines; docs/events.md#census).

The desk is a frozen ``Desk``; each input is a pure function returning the new desk and the
``Effect``s to perform **in order**:

* ``Emit(event)`` — write the event payload (through the stream's writer, ``metaharness.pure.stream_writer``);
* ``Answer(call_id, decision, seam)`` — hand the decision to the harness on that seam (the adapter
  renders it: b10x writes its caller-seam line, a hook writes its body);
* ``Arm(call_id, deadline_ms)`` — start the call's deadline timer, now that its ``tool.requested``
  line is written; ``Disarm(call_id)`` — stop it.

Inputs:

* ``open_desk(mode, frame, vendor_budget_ms)`` — a run's desk (``frame`` is the frame in force).
* ``present(desk, call)`` — a ``PresentedCall`` arrived on ``call.seam``. Seam ``none`` records it
  (never decided). On a deciding seam, by mode (docs/decisions.md#modes): ``frame`` decides at once by
  docs/decisions.md#admission (no frame in force: ``abstain`` by ``adapter`` on seam ``none`` plus one
  ``NO_FRAME_IN_FORCE`` per run); ``ask`` lets a frame in force deny first, else presents with
  ``decision_required:true`` and arms the deadline; ``observe`` allows by ``observe``. Correlation
  (docs/decisions.md#correlation-and-abandonment) is (``call_id``, request digest): a repeat re-emits ``tool.requested``
  and re-answers any earlier decision without deciding again; a changed digest re-emits, warns ``REQUEST_MUTATED`` and,
  on a deciding seam, denies by ``adapter``.
* ``decide(desk, command, elapsed_ms)`` — a well-formed, supported ``tool.decide`` (docs/events.md#commands step 4):
  decides a pending call by ``embedder`` (``latency_ms`` = ``elapsed_ms`` since arming), then its
  ``command.result`` ok; else ``TOO_LATE`` (decided, abandoned or expired) or ``UNKNOWN_CALL``.
* ``expire(desk, call_id, elapsed_ms)`` — a call's deadline fired: deny by ``deadline`` with the
  docs/decisions.md#deadlines reason; nothing when the call is no longer pending.
* ``abandon(desk, why)`` — a turn ended, the stream ended, ``interrupt`` or ``halt``: every pending
  call is denied by ``adapter`` (answer first) and warned ``PENDING_CALL_ABANDONED``
  (docs/decisions.md#correlation-and-abandonment).
* ``set_frame(desk, command_id, frame)`` — a well-formed ``frame.set``: the frame is staged and
  answered ok with ``applies_at``; ``begin_turn(desk)`` puts a staged frame in force at the next turn
  or step boundary (read ``desk.frame_digest`` for ``turn.started``).

The clock is never read: elapsed times come in as arguments. ``desk.census`` counts every
``tool.decided`` the desk emitted (docs/events.md#census) for ``session.ended``.

The desk's state is indexed so each input costs O(log n) in the calls it holds: correlation keys
are held in a persistent map by ``call_id`` (a new desk shares every untouched entry with the old
one) bounded by ``CALL_MEMORY_LIMIT`` (``metaharness.pure.call_memory``: the pending calls are never
forgotten), and the pending calls in a second map with the order they became pending.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Literal, TypeAlias

import msgspec
from immutables import Map
from msgspec import UNSET, Struct
from returns.result import Failure

from metaharness.pure.admission import admit_call, harness_pipe, harness_pipe_deny, harness_pipe_warning
from metaharness.pure.budgets import VENDOR_BUDGET_MS
from metaharness.pure.call_memory import CallMemory
from metaharness.pure.census import ZERO_CENSUS, count_decision
from metaharness.pure.commands import (
    Halt,
    Steering,
    ToolDecide,
    check_supported,
    check_well_formed,
    command_ok,
    frame_set_ok,
    too_late,
    unknown_call,
)
from metaharness.pure.events import (
    Abstain,
    Allow,
    Census,
    Decision,
    Deny,
    Event,
    Replace,
    ToolDecided,
    ToolRequested,
    WarningRaised,
)
from metaharness.pure.frames import Frame, Operation
from metaharness.pure.jsonline import canonical, sha256_hex
from metaharness.pure.modes import DecisionMode
from metaharness.pure.run_stages import deadline_reason, decision_deadline

AbandonCause: TypeAlias = Literal["the turn ended", "the stream ended", "the run was interrupted", "the run was halted"]
"""Why pending calls are abandoned (docs/decisions.md#correlation-and-abandonment), as the deny reason begins."""

NO_FRAME_IN_FORCE = (
    "this run is in frame mode and no frame is in force, so nothing narrowed this call; "
    "the record says so rather than claiming a frame decided it"
)
MUTATED_DENY = "this call id was already presented with a different input"


class PresentedCall(Struct, frozen=True, kw_only=True):
    """A call the harness presented on ``seam``: its id, tool name and input as presented, the
    operations it resolved to and the subjects read from its own arguments. ``catalogue_question``
    marks a listing or describing question on an owned surface (docs/decisions.md#admission step 1); ``unreadable``
    says why metaharness cannot tell what the call would do (a patch it cannot read as Codex does, a
    question under another name than the announcement), and such a call is denied by ``adapter``."""

    call_id: str
    name: str
    input: Any
    seam: str
    operations: tuple[Operation, ...] = ()
    subjects: tuple[str, ...] = ()
    catalogue_question: bool = False
    unreadable: str | None = None


class CallRecord(Struct, frozen=True, kw_only=True):
    """One correlation key (``call_id``, ``digest``) and where it stands: ``recorded`` (seam ``none``,
    never decided), ``pending`` (waiting for the embedder or the deadline) or ``closed`` with the
    decision the harness was given. A ``call_id`` has at most one pending key: a call becomes pending
    only while no other digest was presented under its id (docs/decisions.md#correlation-and-abandonment)."""

    call_id: str
    digest: str
    seam: str
    status: Literal["recorded", "pending", "closed"]
    decision: Decision | None = None
    call: PresentedCall | None = None
    """The call as presented, while it is pending (an embedder's ``replace`` is checked against it)."""


class Emit(Struct, frozen=True):
    """Write this event payload to the stream."""

    event: Event


class Answer(Struct, frozen=True):
    """Hand ``decision`` for ``call_id`` to the harness on ``seam`` (the adapter renders it)."""

    call_id: str
    decision: Decision
    seam: str


class Arm(Struct, frozen=True):
    """Start ``call_id``'s deadline of ``deadline_ms``, now that its ``tool.requested`` is written."""

    call_id: str
    deadline_ms: int


class Disarm(Struct, frozen=True):
    """Stop ``call_id``'s deadline timer."""

    call_id: str


Effect: TypeAlias = Emit | Answer | Arm | Disarm


class Desk(Struct, frozen=True, kw_only=True):
    """The decision desk of one run (see the module docstring for its inputs)."""

    mode: DecisionMode
    frame: Frame | None = None
    staged_frame: Frame | None = None
    vendor_budget_ms: int = VENDOR_BUDGET_MS
    calls: CallMemory[tuple[CallRecord, ...]] = CallMemory()
    """The correlation keys presented, by ``call_id``: the open ones and the last ``CALL_MEMORY_LIMIT`` or more
    closed ones (docs/decisions.md#correlation-and-abandonment)."""
    pending: Map[str, int] = Map()
    """The pending calls' ids, each with the order in which it became pending."""
    presented: int = 0
    """How many calls have become pending so far (the next one's order)."""
    no_frame_warned: bool = False
    census: Census = ZERO_CENSUS

    @property
    def deadline_ms(self) -> int:
        """metaharness's own deadline for one decision (docs/decisions.md#deadlines)."""
        return decision_deadline(self.vendor_budget_ms)

    @property
    def frame_digest(self) -> str | None:
        """The digest of the frame in force, for ``turn.started``."""
        return None if self.frame is None else self.frame.digest

    def pending_call_ids(self) -> tuple[str, ...]:
        """The calls waiting for a decision, in the order they were presented."""
        return tuple(sorted(self.pending, key=self.pending.__getitem__))


Step: TypeAlias = tuple[Desk, tuple[Effect, ...]]


def open_desk(mode: DecisionMode, frame: Frame | None = None, vendor_budget_ms: int = VENDOR_BUDGET_MS) -> Desk:
    """A run's desk: its decision mode, the frame in force, the vendor's budget for one decision."""
    return Desk(mode=mode, frame=frame, vendor_budget_ms=vendor_budget_ms)


def request_digest(call_id: str, name: str, input: Any) -> str:
    """SHA-256 hex of ``{"call_id","input","name"}`` with keys sorted at every level
    (docs/decisions.md#correlation-and-abandonment)."""
    return sha256_hex(canonical({"call_id": call_id, "input": input, "name": name}))


def _requested(call: PresentedCall, required: bool, deadline_ms: int | None) -> Emit:
    operations = tuple(dict.fromkeys(operation.op for operation in call.operations))
    return Emit(
        ToolRequested(
            call_id=call.call_id,
            name=call.name,
            input=call.input,
            operations=operations or UNSET,
            subjects=call.subjects or UNSET,
            decision_required=required,
            deadline_ms=deadline_ms,
            seam=call.seam,
        )
    )


def _recorded(desk: Desk, new: CallRecord) -> Desk:
    """``desk`` with ``new`` in place of its correlation key's record, and pending exactly when ``new`` is."""
    keys = desk.calls.get(new.call_id, ())
    calls = desk.calls.set(new.call_id, (*(r for r in keys if r.digest != new.digest), new), desk.pending)
    if new.status == "pending":
        pending = desk.pending.set(new.call_id, desk.presented)
        return msgspec.structs.replace(desk, calls=calls, pending=pending, presented=desk.presented + 1)
    if any(r.digest == new.digest and r.status == "pending" for r in keys):
        return msgspec.structs.replace(desk, calls=calls, pending=desk.pending.delete(new.call_id))
    return msgspec.structs.replace(desk, calls=calls)


def _closed(
    desk: Desk, record: CallRecord, decision: Decision, decided_by: str, latency_ms: int | None, decided_seam: str
) -> Step:
    """Answer the harness, then record ``tool.decided`` and count it (docs/adapters/b10x.md#caller-seam step 3,
    docs/events.md#census)."""
    decided = ToolDecided(
        call_id=record.call_id, decision=decision, decided_by=decided_by, seam=decided_seam, latency_ms=latency_ms
    )
    closed = msgspec.structs.replace(record, status="closed", decision=decision, call=None)
    new = _recorded(msgspec.structs.replace(desk, census=count_decision(desk.census, decided)), closed)
    return new, (Answer(record.call_id, decision, record.seam), Emit(decided))


def present(desk: Desk, call: PresentedCall) -> Step:
    """A call presented on ``call.seam`` (docs/decisions.md#modes, #correlation-and-abandonment); see the
    module docstring."""
    digest = request_digest(call.call_id, call.name, call.input)
    keys = desk.calls.get(call.call_id, ())
    deciding = call.seam != "none"
    if not keys and not deciding:  # a first presentation, recorded: no other key to compare or to keep
        record = CallRecord(call_id=call.call_id, digest=digest, seam=call.seam, status="recorded")
        calls = desk.calls.set(call.call_id, (record,), desk.pending)
        return msgspec.structs.replace(desk, calls=calls), (_requested(call, False, None),)
    same = next((r for r in keys if r.digest == digest), None)
    if same is not None and not (same.status == "recorded" and deciding):
        return _repeat(desk, call, same)
    if any(r.digest != digest for r in keys):
        return _mutated(desk, call, digest)
    return _fresh(desk, call, CallRecord(call_id=call.call_id, digest=digest, seam=call.seam, status="pending", call=call))


def _repeat(desk: Desk, call: PresentedCall, same: CallRecord) -> Step:
    """Same ``call_id``, same digest: re-emit ``tool.requested``, never decide twice; a decision already
    taken is handed to the harness again, since it is asking again."""
    if same.status == "pending" and call.seam != "none":
        return desk, (_requested(call, True, desk.deadline_ms),)
    effects: tuple[Effect, ...] = (_requested(call, False, None),)
    if same.decision is not None and call.seam != "none":
        effects += (Answer(call.call_id, same.decision, call.seam),)
    return desk, effects


def _mutated(desk: Desk, call: PresentedCall, digest: str) -> Step:
    """Same ``call_id``, different digest: re-emit, warn ``REQUEST_MUTATED`` and, where the seam can
    carry an answer, deny by ``adapter`` (docs/decisions.md#correlation-and-abandonment)."""
    warning = WarningRaised(
        code="REQUEST_MUTATED",
        message=(
            f"call {call.call_id} was presented again with a different input; the correlation key is the call id "
            "plus the digest of the request as presented, so the earlier decision does not carry over"
        ),
    )
    effects: tuple[Effect, ...] = (_requested(call, False, None), Emit(warning))
    if call.seam == "none":
        record = CallRecord(call_id=call.call_id, digest=digest, seam=call.seam, status="recorded")
        return _recorded(desk, record), effects
    record = CallRecord(call_id=call.call_id, digest=digest, seam=call.seam, status="pending")
    new, decided = _closed(desk, record, Deny(MUTATED_DENY), "adapter", None, call.seam)
    return new, effects + decided


def _fresh(desk: Desk, call: PresentedCall, record: CallRecord) -> Step:
    """A new call on a deciding seam, decided by mode (docs/decisions.md#modes); an unreadable one is denied, and so is
    a file tool aimed at the run's own pipes unless observe records it (docs/decisions.md#harness-pipes)."""
    if call.unreadable is not None:
        new, decided = _closed(desk, record, Deny(call.unreadable), "adapter", None, call.seam)
        return new, (_requested(call, False, None), *decided)
    pipe = harness_pipe(call.operations, call.subjects)
    if desk.mode == "observe":
        new, decided = _closed(desk, record, Allow(), "observe", None, call.seam)
        warned = () if pipe is None else (Emit(harness_pipe_warning(call.call_id, pipe)),)
        return new, (_requested(call, False, None), *warned, *decided)
    if pipe is not None:
        new, decided = _closed(desk, record, harness_pipe_deny(pipe), "adapter", None, call.seam)
        return new, (_requested(call, False, None), *decided)
    if desk.mode == "frame" and desk.frame is None:
        effects: tuple[Effect, ...] = (_requested(call, False, None),)
        if not desk.no_frame_warned:
            effects += (Emit(WarningRaised(code="NO_FRAME_IN_FORCE", message=NO_FRAME_IN_FORCE)),)
        new, decided = _closed(
            msgspec.structs.replace(desk, no_frame_warned=True), record, Abstain(), "adapter", None, "none"
        )
        return new, effects + decided
    if desk.frame is not None:
        admission = admit_call(
            desk.frame, call.name, call.operations, call.subjects, catalogue_question=call.catalogue_question
        )
        if desk.mode == "frame" or isinstance(admission.decision, Deny):
            effects = (_requested(call, False, None),)
            if admission.warning is not None:
                effects += (Emit(admission.warning),)
            new, decided = _closed(desk, record, admission.decision, "frame", None, call.seam)
            return new, effects + decided
    return _recorded(desk, record), (_requested(call, True, desk.deadline_ms), Arm(call.call_id, desk.deadline_ms))


def _pending(desk: Desk, call_id: str) -> CallRecord | None:
    if call_id not in desk.pending:
        return None
    return next(r for r in desk.calls.get(call_id, ()) if r.status == "pending")


def _pending_records(desk: Desk) -> tuple[CallRecord, ...]:
    """The pending records in the order they became pending."""
    return tuple(r for call_id in desk.pending_call_ids() for r in desk.calls.get(call_id, ()) if r.status == "pending")


def pending_call(desk: Desk, call_id: str) -> PresentedCall | None:
    """The pending call ``call_id`` as it was presented, or ``None`` when it is not pending."""
    record = _pending(desk, call_id)
    return None if record is None else record.call


def replace_inadmissible(call_id: str, reason: str) -> WarningRaised:
    """The warning for an embedder's replacement the frame in force does not admit."""
    return WarningRaised(
        code="replace-inadmissible",
        message=f"the embedder's replacement input for {call_id} is not admitted by the frame in force, so the call "
        f"is denied: {reason}",
    )


def decide(desk: Desk, command: ToolDecide, elapsed_ms: int | None, replacement: PresentedCall | None = None) -> Step:
    """A well-formed, supported ``tool.decide`` (docs/events.md#commands step 4): ``tool.decided`` by ``embedder``
    then ``command.result`` ok for a pending call; ``TOO_LATE`` for a decided, abandoned or expired one;
    ``UNKNOWN_CALL`` for a call never presented on a deciding seam. ``elapsed_ms`` is the time since
    the call's deadline was armed. A ``replace`` is checked against the frame in force like the original
    call: ``replacement`` is the pending call as the kind reads it with the new input; one the frame
    denies is denied by ``frame`` with ``replace-inadmissible`` (docs/decisions.md#admission)."""
    record = _pending(desk, command.call_id)
    if record is None:
        closed = any(r.status == "closed" for r in desk.calls.get(command.call_id, ()))
        refusal = too_late(command.id, command.call_id) if closed else unknown_call(command.id, command.call_id)
        return desk, (Emit(refusal),)
    if isinstance(command.decision, Replace) and desk.frame is not None and replacement is not None:
        admission = admit_call(desk.frame, replacement.name, replacement.operations, replacement.subjects,
                               catalogue_question=replacement.catalogue_question)  # fmt: skip
        if isinstance(admission.decision, Deny):
            new, decided = _closed(desk, record, admission.decision, "frame", elapsed_ms, record.seam)
            warning = Emit(replace_inadmissible(record.call_id, admission.decision.reason))
            return new, (Disarm(record.call_id), warning, *decided, Emit(command_ok(command.id)))
    new, decided = _closed(desk, record, command.decision, "embedder", elapsed_ms, record.seam)
    return new, (Disarm(record.call_id), *decided, Emit(command_ok(command.id)))


def expire(desk: Desk, call_id: str, elapsed_ms: int) -> Step:
    """``call_id``'s deadline fired ``elapsed_ms`` after arming: deny by ``deadline`` with the
    docs/decisions.md#deadlines reason; nothing when it was decided meanwhile."""
    record = _pending(desk, call_id)
    if record is None:
        return desk, ()
    reason = deadline_reason(desk.deadline_ms, desk.vendor_budget_ms)
    return _closed(desk, record, Deny(reason), "deadline", elapsed_ms, record.seam)


def abandon(desk: Desk, why: AbandonCause) -> Step:
    """Close every pending call undecided (docs/decisions.md#correlation-and-abandonment): its deny by ``adapter`` is
    handed to the harness first, then ``tool.decided`` and ``PENDING_CALL_ABANDONED``, call by call."""
    effects: list[Effect] = []
    reason = f"{why} before this call was decided, so nothing ran"
    for record in _pending_records(desk):
        desk, decided = _closed(desk, record, Deny(reason), "adapter", None, record.seam)
        warning = WarningRaised(
            code="PENDING_CALL_ABANDONED", message=f"{record.call_id} was never decided by the embedder"
        )
        effects += [Disarm(record.call_id), *decided, Emit(warning)]
    return desk, tuple(effects)


def set_frame(desk: Desk, command_id: str, frame: Frame) -> Step:
    """A well-formed ``frame.set``: the frame is staged for the next turn or step boundary and the
    command is answered ok with that ``applies_at`` (docs/events.md#commands)."""
    return msgspec.structs.replace(desk, staged_frame=frame), (Emit(frame_set_ok(command_id)),)


def begin_turn(desk: Desk) -> Desk:
    """A turn or step boundary: a staged frame comes into force."""
    if desk.staged_frame is None:
        return desk
    return msgspec.structs.replace(desk, frame=desk.staged_frame, staged_frame=None)


Control: TypeAlias = Literal["interrupt", "halt"] | None
"""What the shell does to the child after a steering command's effects: interrupt the turn, halt the run, or nothing."""


def steer(
    desk: Desk, command: Steering, latency_ms: int | None, adapter: str, honoured: Collection[str],
    replacement: Callable[[ToolDecide], PresentedCall | None] = lambda command: None,
) -> tuple[Desk, tuple[Effect, ...], Control]:  # fmt: skip
    """Steps 2–4 of docs/events.md#commands for one framed command on a hook seam, and the control the shell applies
    after the effects: a malformed or unhonoured command its refusal; ``tool.decide`` to the desk (``replacement``
    reads a well-formed ``replace`` as its call would be presented); ``interrupt`` and ``halt`` abandon every pending call first (their denies
    handed to the hooks before any signal), then ``command.result`` ok."""
    formed = check_well_formed(command).bind(lambda ok: check_supported(ok.command, adapter, honoured))
    if isinstance(formed, Failure):
        return desk, (Emit(formed.failure()),), None
    if isinstance(command, ToolDecide):
        desk, effects = decide(desk, command, latency_ms, replacement(command))
        return desk, effects, None
    control: Control = "halt" if isinstance(command, Halt) else "interrupt"
    desk, effects = abandon(desk, "the run was halted" if control == "halt" else "the run was interrupted")
    return desk, (*effects, Emit(command_ok(command.id))), control
