"""Claude Code's live parts behind ``metaharness.shell.adapters.LiveAdapter``."""

from __future__ import annotations

import json
import os
import sys
from typing import IO, TYPE_CHECKING

from metaharness.pure.refusal import Refusal
from metaharness.shell.live_adapter import ScriptedChild, VectorReport, record_object

if TYPE_CHECKING:
    from metaharness.pure.options import RunOptions


class ClaudeScriptedChild:
    """Claude Code writes its record on stdout, announces a call in an assistant message and asks about it
    in-band: a ``hook_callback`` control request on stdout, answered on stdin
    (docs/adapters/claude.md#in-band-decisions)."""

    def start(self) -> None:
        """Read ``initialize`` and confirm the hooks as the pinned CLI does, then read the user turn."""
        from metaharness.pure.jsonline import compact

        request = json.loads(sys.stdin.buffer.readline())
        body = {"hooks_applied": True, "hook_on_failure_supported": True}
        response = {"subtype": "success", "request_id": request["request_id"], "response": body}
        os.write(sys.stdout.fileno(), compact({"type": "control_response", "response": response}) + b"\n")
        sys.stdin.buffer.readline()

    def ask(self, hook: str, question: bytes) -> bytes:
        """The captured hook request as a ``hook_callback``; the ``response`` of the answer, compact."""
        from metaharness.pure.claude.control import CALLBACK_ID
        from metaharness.pure.jsonline import compact

        hook_input = json.loads(question)
        request = {"subtype": "hook_callback", "callback_id": CALLBACK_ID, "input": hook_input,
                   "tool_use_id": hook_input.get("tool_use_id")}  # fmt: skip
        line = compact({"type": "control_request", "request_id": "conformance-c3", "request": request})
        os.write(sys.stdout.fileno(), line + b"\n")
        for raw in sys.stdin.buffer:
            answer = json.loads(raw)
            if answer.get("type") == "control_response" and answer["response"].get("request_id") == "conformance-c3":
                return compact(answer["response"].get("response"))
        return b""

    def announces_call(self, line: bytes) -> bool:
        """The line is an assistant message with a ``tool_use`` block."""
        record = record_object(line)
        message = record.get("message") if record.get("type") == "assistant" else None
        content = message.get("content") if isinstance(message, dict) else None
        return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)

    def record_sink(self) -> IO[bytes]:
        """A copy of stdout."""
        return os.fdopen(os.dup(sys.stdout.fileno()), "wb")


class ClaudeLive:
    """claude's run, doctor, vectors and scripted child."""

    def run(self, options: RunOptions) -> int:
        """Stages 5–7 first, so their refusals import no launch, loop or wind-up (docs/DEVELOPING.md#the-run-engine)."""
        from returns.result import Failure

        from metaharness.shell.claude.inputs import gathered_inputs
        from metaharness.shell.refusals import refuse

        inputs = gathered_inputs(options)
        if isinstance(inputs, Failure):
            return refuse(inputs.failure())
        from metaharness.shell.claude.run import run_claude

        return run_claude(options, inputs.unwrap())

    def doctor(self) -> int:
        from metaharness.shell.claude.doctor import run_claude_doctor

        return run_claude_doctor()

    def vectors(self) -> VectorReport | Refusal:
        from metaharness.pure.claude.vectors import INTERPRETER, claude_vectors
        from metaharness.shell.claude.conformance import run_exchange
        from metaharness.shell.facts import own_cli
        from metaharness.shell.vendor_vectors import vendor_report

        return vendor_report(claude_vectors(own_cli(INTERPRETER)), run_exchange)

    def scripted_child(self) -> ScriptedChild | None:
        return ClaudeScriptedChild()


LIVE = ClaudeLive()
