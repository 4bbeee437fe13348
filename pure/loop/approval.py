"""The approval rule and the caller seam's answer grammar (docs/loop.md#approvals, #caller-seam)."""

from __future__ import annotations

import msgspec

from metaharness.pure.bounds import decode_bounded

CEILINGS = ("low", "medium", "high", "destructive")
MODES = ("auto", "prompt", "deny", "all", "caller")
ANSWER_CAP = 65536
UNREADABLE_REASON = "the caller's answer could not be read"
NO_REASON = "the caller gave no reason"


def needs_approval(risk: str, ceiling: str) -> bool:
    """A call asks iff its risk is strictly above the ceiling (docs/loop.md#approvals)."""
    return CEILINGS.index(risk) > CEILINGS.index(ceiling)


def deny_mode_reason(ceiling: str) -> str:
    """Why ``--approve deny`` refuses a call above the ceiling."""
    return (
        f"no approver is attached to this run, so calls above the `{ceiling}` ceiling are refused; "
        "retrying cannot help"
    )


def not_approved(entry: str, reason: str) -> str:
    """The model-facing text of a denied call (docs/loop.md#refusal-texts)."""
    return f"`{entry}` was not approved: {reason}"


class Allow(msgspec.Struct, frozen=True):
    """The caller allowed the call."""


class Deny(msgspec.Struct, frozen=True):
    """The caller denied the call, with its reason or the stand-in."""

    reason: str


class Unreadable(msgspec.Struct, frozen=True):
    """The answer could not be read; ``why`` names the defect."""

    why: str


CallerAnswer = Allow | Deny | Unreadable


class _Wire(msgspec.Struct, forbid_unknown_fields=True):
    call_id: str
    decision: str
    reason: str | msgspec.UnsetType = msgspec.UNSET


_ANSWER_DECODER = msgspec.json.Decoder(_Wire)


def read_answer(line: bytes, call_id: str) -> CallerAnswer:
    """One stdin line (its ``\\n`` removed) as an answer for ``call_id`` (docs/loop.md#caller-seam steps 2, 4).

    A trailing ``\\r`` is dropped. Never raises: any defect is ``Unreadable`` with a named cause.
    """
    if len(line) > ANSWER_CAP:
        return Unreadable(f"the line is over the {ANSWER_CAP} byte bound")
    if line.endswith(b"\r"):
        line = line[:-1]
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return Unreadable("the line is not UTF-8")
    try:
        decode_bounded(line)
    except msgspec.DecodeError:
        return Unreadable("the line is not JSON")
    try:
        answer = _ANSWER_DECODER.decode(line)
    except msgspec.ValidationError as error:
        return Unreadable(f"the line is not an answer object ({error})")
    if answer.call_id != call_id:
        return Unreadable(f"the line answers `{answer.call_id}`, not `{call_id}`")
    if answer.decision == "allow" and answer.reason is msgspec.UNSET:
        return Allow()
    if answer.decision == "deny":
        return Deny(answer.reason if isinstance(answer.reason, str) else NO_REASON)
    return Unreadable("the decision is not `allow` or `deny` with its own keys")


def unreadable_warning(call_id: str, why: str) -> str:
    """The ``approval-answer-unreadable`` warning text."""
    return f"the answer for {call_id} could not be read: {why}"
