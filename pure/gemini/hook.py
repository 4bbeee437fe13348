"""Gemini CLI's BeforeTool hook on the shared hook channel (docs/adapters/gemini.md#seam).

The program speaks the channel's protocol (``metaharness.pure.hook_channel``) but answers in Gemini CLI's
own shape: ``{"decision":"deny","reason":…}`` blocks a call, and exit 2 blocks it whatever stdout says.
Gemini CLI 0.61.0 lets a call run when its hook times out or exits with any other failure, so every
path of the program that has no answer from metaharness prints the deny body **and exits 2**, and its
backstop gives up 3 s before Gemini's own timeout (``HOOK_TIMEOUT_S``, given to Gemini CLI in milliseconds).
"""

from __future__ import annotations

from metaharness.pure.budgets import HOOK_TIMEOUT_S
from metaharness.pure.events import Abstain, Allow, Decision, Deny, Replace
from metaharness.pure.hook_channel import EMPTY_REASON, NO_ANSWER_REASON, render_channel_program
from metaharness.pure.jsonline import compact

BLOCKING_EXIT = 2
"""The exit status Gemini CLI reads as a block whatever the hook printed."""


def deny_body(reason: str) -> bytes:
    """The deny body; an empty reason gets the stated default."""
    return compact({"decision": "deny", "reason": reason if reason.strip() else EMPTY_REASON})


def gemini_hook_answer(decision: Decision) -> bytes:
    """What the hook prints for a decision: allow as ``{"decision":"allow"}``, replace as an allow carrying
    ``hookSpecificOutput.tool_input``, deny with a non-empty reason, abstain as zero bytes."""
    if isinstance(decision, Allow):
        return compact({"decision": "allow"})
    if isinstance(decision, Deny):
        return deny_body(decision.reason)
    if isinstance(decision, Replace):
        return compact({"decision": "allow",
                        "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": decision.input}})
    assert isinstance(decision, Abstain)
    return b""


def render_gemini_hook(scratch: str, hook_timeout_s: int = HOOK_TIMEOUT_S) -> str:
    """The text of the channel's ``hooks/pretooluse`` (``HOOK_PROGRAM``, where conformance C3's scripted child runs
    it) for a scratch root, mode 0700 when written: the channel's program (``render_channel_program``),
    every failure (a signal among them) a deny with exit 2."""
    return render_channel_program(scratch, deny_body(NO_ANSWER_REASON), BLOCKING_EXIT, "BeforeTool", hook_timeout_s)
