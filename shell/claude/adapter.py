"""Claude Code's live parts behind ``metaharness.shell.adapters.LiveAdapter``."""

from __future__ import annotations

import json
import os
import sys
from typing import IO, TYPE_CHECKING, Any

from metaharness.pure.refusal import Refusal
from metaharness.shell.live_adapter import ScriptedChild, VectorReport

if TYPE_CHECKING:
    from metaharness.pure.options import RunOptions


class ClaudeScriptedChild:
    """Claude Code writes its record on stdout and announces a call in an assistant message."""

    def announces_call(self, line: bytes) -> bool:
        """The line is an assistant message with a ``tool_use`` block."""
        try:
            record: Any = json.loads(line)
        except ValueError:
            return False
        if not isinstance(record, dict):
            return False
        message = record.get("message") if record.get("type") == "assistant" else None
        content = message.get("content") if isinstance(message, dict) else None
        return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)

    def record_sink(self) -> IO[bytes]:
        """A copy of stdout."""
        return os.fdopen(os.dup(sys.stdout.fileno()), "wb")


class ClaudeLive:
    """claude's run, doctor, vectors and scripted child."""

    def run(self, options: RunOptions) -> int:
        from metaharness.shell.claude.run import run_claude

        return run_claude(options)

    def doctor(self) -> int:
        from metaharness.shell.claude.doctor import run_claude_doctor

        return run_claude_doctor()

    def vectors(self) -> VectorReport | Refusal:
        from metaharness.pure.claude.vectors import contract_line
        from metaharness.pure.conformance import summary_line
        from metaharness.shell.claude.conformance import claude_outcomes

        outcomes = claude_outcomes()
        results = tuple((outcome.status, outcome.line()) for outcome in outcomes)
        return VectorReport(results, summary_line(outcomes), contract_line(outcomes))

    def scripted_child(self) -> ScriptedChild | None:
        return ClaudeScriptedChild()


LIVE = ClaudeLive()
