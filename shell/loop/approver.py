"""Approvers (docs/loop.md#approvals): all, deny, the caller seam on stdin, the terminal prompt on ``/dev/tty``."""

from __future__ import annotations

from typing import BinaryIO, TextIO

import msgspec

from metaharness.pure.loop.approval import (
    ANSWER_CAP,
    UNREADABLE_REASON,
    Allow,
    Deny,
    Unreadable,
    deny_mode_reason,
    read_answer,
    unreadable_warning,
)
from metaharness.shell.loop.cancel import CancelToken, Interrupted


class Verdict(msgspec.Struct, frozen=True):
    """An approver's decision: approved, the denial reason, an optional unreadable-answer warning."""

    approved: bool
    reason: str = ""
    warning: str | None = None
    cancelled: bool = False


class AllApprover:
    """``--approve all`` / ``--yes``."""

    def decide(self, call_id: str, entry: str, summary: str) -> Verdict:
        return Verdict(True)


class DenyApprover:
    """``--approve deny`` (and ``auto`` without a terminal)."""

    def __init__(self, ceiling: str) -> None:
        self.reason = deny_mode_reason(ceiling)

    def decide(self, call_id: str, entry: str, summary: str) -> Verdict:
        return Verdict(False, self.reason)


class CallerApprover:
    """``--approve caller``: one stdin line per asking call; EOF denies this and every later call."""

    def __init__(self, stdin: BinaryIO, cancel: CancelToken) -> None:
        self.stdin = stdin
        self.cancel = cancel
        self.closed = False

    def decide(self, call_id: str, entry: str, summary: str) -> Verdict:
        if self.closed:
            return Verdict(False, UNREADABLE_REASON)
        try:
            with self.cancel.blocking(bounded_by_deadline=False):
                line = self.stdin.readline(ANSWER_CAP + 2)
                if line and not line.endswith(b"\n") and len(line) > ANSWER_CAP:
                    self._discard_rest()
        except Interrupted:
            return Verdict(False, "the run was cancelled while waiting for the caller", cancelled=True)
        if not line:
            self.closed = True
            return Verdict(False, UNREADABLE_REASON, unreadable_warning(call_id, "stdin is closed"))
        line = line.removesuffix(b"\n")
        answer = read_answer(line, call_id)
        if isinstance(answer, Allow):
            return Verdict(True)
        if isinstance(answer, Deny):
            return Verdict(False, answer.reason)
        assert isinstance(answer, Unreadable)
        return Verdict(False, UNREADABLE_REASON, unreadable_warning(call_id, answer.why))

    def _discard_rest(self) -> None:
        """Drop the rest of an over-long line, so the next call reads a fresh one."""
        while True:
            chunk = self.stdin.readline(ANSWER_CAP)
            if not chunk or chunk.endswith(b"\n"):
                return


class PromptApprover:
    """The terminal prompt on ``/dev/tty``; ``always`` approves an entry from then on."""

    def __init__(self, answers: TextIO, questions: TextIO, cancel: CancelToken) -> None:
        self.answers = answers
        self.questions = questions
        self.cancel = cancel
        self.always: set[str] = set()
        self.closed = False

    def decide(self, call_id: str, entry: str, summary: str) -> Verdict:
        if entry in self.always:
            return Verdict(True)
        if self.closed:
            return Verdict(False, "the operator's terminal is closed")
        self.questions.write(f"{summary}\n")
        for _ in range(3):
            self.questions.write(f"approve? [y]es once · [n]o · [a]lways for `{entry}` > ")
            self.questions.flush()
            try:
                with self.cancel.blocking(bounded_by_deadline=False):
                    line = self.answers.readline()
            except Interrupted:
                return Verdict(False, "the run was cancelled while waiting for the operator", cancelled=True)
            if not line:
                self.closed = True
                return Verdict(False, "the operator's terminal is closed")
            answer = line.strip().lower()
            if answer in ("y", "yes"):
                return Verdict(True)
            if answer in ("a", "always"):
                self.always.add(entry)
                return Verdict(True)
            if answer in ("", "n", "no"):
                return Verdict(False, "the operator declined")
        return Verdict(False, "the operator's answer could not be read")


Approver = AllApprover | DenyApprover | CallerApprover | PromptApprover
