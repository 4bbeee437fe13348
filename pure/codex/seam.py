"""A codex hook call for the decision desk, and the answers codex accepts (docs/adapters/common.md#vendor-decisions;
docs/adapters/codex.md).

The correlator (``metaharness.pure.correlation``) says when a call is presented; ``presented_call``
hands it to the decision desk (``metaharness.pure.decisions``, which writes its ``tool.requested``);
``answer_body`` renders a decision as the bytes the hook prints.
"""

from __future__ import annotations

from typing import Any

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.codex.rendering import resolve_call, unreadable_patch
from metaharness.pure.decisions import Desk, PresentedCall
from metaharness.pure.events import Decision, Deny, Replace, ToolResult
from metaharness.pure.hook_channel import HookCall, deny_answer, pretooluse_answer, request_unreadable
from metaharness.pure.refusal import Refusal
from metaharness.pure.subjects import TreeFacts, resolve_subjects


def presented_call(call: HookCall, tree: TreeFacts, session_cwd: str | None = None) -> PresentedCall:
    """A call the hook delivered, for the decision desk: the seam's name and input, seam ``hook``, its
    ``file:`` subjects resolved against the child's ``tree``. Codex 0.171.0 gives the hook a shell call's
    ``workdir`` only as the request's ``cwd``; when that is not the session's directory the input keeps it
    as ``workdir``, so a call that ran elsewhere never reads as if it ran here."""
    operations, subjects = resolve_call(call.name, call.input)
    elsewhere = call.cwd is not None and session_cwd is not None and call.cwd != session_cwd
    keeps = elsewhere and isinstance(call.input, dict) and "workdir" not in call.input
    presented = {**call.input, "workdir": call.cwd} if keeps else call.input
    return PresentedCall(
        call_id=call.call_id,
        name=call.name,
        input=presented,
        seam="hook",
        operations=operations,
        subjects=resolve_subjects(subjects, tree.cwd, tree.links),
        unreadable=request_unreadable(call) or unreadable_patch(call.name, call.input),
    )


def answer_body(decision: Decision) -> bytes:
    """What the hook prints for a decision at 0.171.0 (docs/adapters/common.md#answer-bodies, codex column): allow
    and abstain are zero bytes, deny is the deny envelope (an empty reason gets the stated default),
    replace is an allow envelope carrying ``updatedInput``."""
    if isinstance(decision, Deny):
        return deny_answer(decision.reason)
    if isinstance(decision, Replace):
        return pretooluse_answer(permissionDecision="allow", updatedInput=decision.input)
    return b""


def check_replacement(name: str, input: Any) -> Result[Any, Refusal]:
    """A ``replace`` for ``Bash``/``apply_patch`` must hold a string ``command``, else ``MALFORMED``
    and the call stays open (docs/adapters/common.md#vendor-decisions, design choice)."""
    if name in ("Bash", "apply_patch") and not (isinstance(input, dict) and isinstance(input.get("command"), str)):
        return Failure(Refusal(
            "MALFORMED",
            f"a replacement input for {name} must be an object holding a string command, which is what codex runs",
        ))
    return Success(input)


def denied_result(desk: Desk, result: ToolResult) -> ToolResult:
    """A call the desk denied ran nothing, so its result is an error (``is_error:true``, as Claude
    Code records it), where the rollout's output line alone leaves it unknown."""
    denied = any(isinstance(record.decision, Deny) for record in desk.calls.get(result.call_id, ()))
    return msgspec.structs.replace(result, is_error=True) if denied and result.is_error is None else result
