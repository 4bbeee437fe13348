"""A codex hook call for the decision desk, and the answers codex accepts (spec 50 §2, §4).

The correlator (``metaharness.pure.correlation``) says when a call is presented; ``presented_call``
hands it to the decision desk (``metaharness.pure.decisions``, which writes its ``tool.requested``);
``answer_body`` renders a decision as the bytes the hook prints.
"""

from __future__ import annotations

from typing import Any

from metaharness.pure.codex.rendering import resolve_call, unreadable_patch
from metaharness.pure.decisions import PresentedCall
from metaharness.pure.events import Decision, Deny, Replace
from metaharness.pure.hook_channel import HookCall, deny_answer, pretooluse_answer, request_unreadable
from metaharness.pure.refusal import Refusal
from metaharness.pure.subjects import TreeFacts, resolve_subjects


def presented_call(call: HookCall, tree: TreeFacts) -> PresentedCall:
    """A call the hook delivered, for the decision desk: the seam's name and input, seam ``hook``,
    its ``file:`` subjects resolved against the child's ``tree``."""
    operations, subjects = resolve_call(call.name, call.input)
    return PresentedCall(
        call_id=call.call_id,
        name=call.name,
        input=call.input,
        seam="hook",
        operations=operations,
        subjects=resolve_subjects(subjects, tree.cwd, tree.links),
        unreadable=request_unreadable(call) or unreadable_patch(call.name, call.input),
    )


def answer_body(decision: Decision) -> bytes:
    """What the hook prints for a decision at 0.171.0 (spec 50 §2 "Wire bodies", codex column): allow
    and abstain are zero bytes, deny is the deny envelope (an empty reason gets the stated default),
    replace is an allow envelope carrying ``updatedInput``."""
    if isinstance(decision, Deny):
        return deny_answer(decision.reason)
    if isinstance(decision, Replace):
        return pretooluse_answer(permissionDecision="allow", updatedInput=decision.input)
    return b""


def check_replacement(name: str, input: Any) -> Refusal | None:
    """A ``replace`` for ``Bash``/``apply_patch`` must hold a string ``command``, else ``MALFORMED``
    and the call stays open (spec 50 §2, design choice)."""
    if name in ("Bash", "apply_patch") and not (isinstance(input, dict) and isinstance(input.get("command"), str)):
        return Refusal(
            "MALFORMED",
            f"a replacement input for {name} must be an object holding a string command, which is what codex runs",
        )
    return None
