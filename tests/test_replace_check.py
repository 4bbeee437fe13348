"""An embedder's ``replace`` is checked against the frame in force like the original call; one the frame
does not admit is a deny by ``frame`` with ``replace-inadmissible`` (docs/decisions.md#admission)."""

from __future__ import annotations

from typing import Any

from helpers.frames import frame_skeleton

from metaharness.pure.commands import ToolDecide, command_ok
from metaharness.pure.decisions import Disarm, Emit, PresentedCall, decide, open_desk, pending_call, present
from metaharness.pure.events import Deny, Replace, ToolDecided, WarningRaised
from metaharness.pure.frames import Frame, Operation, seal_frame
from metaharness.pure.program_subjects import command_subjects


def git_frame() -> Frame:
    return seal_frame(frame_skeleton(operations=[{"op": "shell"}], subjects=[{"subject": "proc:git", "operations": [{"op": "shell"}]}, {"subject": "**", "operations": []}])).unwrap()  # fmt: skip


def bash(command: str) -> PresentedCall:
    return PresentedCall(call_id="toolu_1", name="Bash", input={"command": command}, seam="hook",
                         operations=(Operation("shell"),), subjects=command_subjects(command))  # fmt: skip


def replaced(command: str) -> tuple[Any, ...]:
    desk, _ = present(open_desk("ask", git_frame()), bash("git status"))
    pending = pending_call(desk, "toolu_1")
    assert pending == bash("git status")
    decision = Replace({"command": command})
    replacement = bash(command)
    _, effects = decide(desk, ToolDecide(id="c1", call_id="toolu_1", decision=decision), 7, replacement)
    return effects


def test_an_admitted_replacement_is_the_embedders() -> None:
    effects = replaced("git log")
    decided = [e.event for e in effects if isinstance(e, Emit) and isinstance(e.event, ToolDecided)]
    assert decided == [ToolDecided(call_id="toolu_1", decision=Replace({"command": "git log"}), decided_by="embedder",
                                   seam="hook", latency_ms=7)]  # fmt: skip


def test_an_inadmissible_replacement_is_denied_by_the_frame_with_a_warning() -> None:
    for command in ("git -c alias.x='!touch y' x", "git log --output=/elsewhere", "touch y", "env git status"):
        effects = replaced(command)
        assert isinstance(effects[0], Disarm)
        warning, decided, result = (e.event for e in effects[1:] if isinstance(e, Emit))
        assert isinstance(warning, WarningRaised) and warning.code == "replace-inadmissible"
        assert isinstance(decided, ToolDecided) and decided.decided_by == "frame"
        assert isinstance(decided.decision, Deny) and "does not admit shell" in decided.decision.reason
        assert result == command_ok("c1")


def test_without_a_frame_a_replacement_is_not_checked() -> None:
    desk, _ = present(open_desk("ask"), bash("git status"))
    decision = Replace({"command": "touch y"})
    _, effects = decide(desk, ToolDecide(id="c1", call_id="toolu_1", decision=decision), 7, bash("touch y"))
    assert [type(e.event).__name__ for e in effects if isinstance(e, Emit)] == ["ToolDecided", "CommandResult"]
