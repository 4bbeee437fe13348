"""Codex's live parts behind ``metaharness.shell.adapters.LiveAdapter``."""

from __future__ import annotations

import os
import subprocess
from typing import IO, TYPE_CHECKING

from metaharness.pure.refusal import Refusal
from metaharness.shell.live_adapter import ScriptedChild, VectorReport, record_object

if TYPE_CHECKING:
    from metaharness.pure.options import RunOptions

ROLLOUT = "sessions/2026/11/30/rollout-2026-11-30T00-00-00-golden.jsonl"
"""Where the scripted child writes the rollout, under ``$CODEX_HOME``."""


class CodexScriptedChild:
    """Codex writes a rollout under ``$CODEX_HOME/sessions/`` and announces a call in a
    ``function_call`` or ``custom_tool_call`` payload."""

    def announces_call(self, line: bytes) -> bool:
        """The line is a rollout ``function_call``/``custom_tool_call``."""
        payload = record_object(line).get("payload")
        return isinstance(payload, dict) and payload.get("type") in ("function_call", "custom_tool_call")

    def record_sink(self) -> IO[bytes]:
        """The rollout file, appended to."""
        path = os.path.join(os.environ["CODEX_HOME"], ROLLOUT)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return open(path, "ab")

    def start(self) -> None:
        """Codex needs nothing before its first rollout line."""

    def ask(self, hook: str, question: bytes) -> bytes:
        """The scratch hook program, run with the request on its stdin: what it printed."""
        return subprocess.run([hook], input=question, capture_output=True, check=False).stdout


class CodexLive:
    """codex's run, doctor, vectors and scripted child."""

    def run(self, options: RunOptions) -> int:
        """Stages 5–6 first, so their refusals import no launch, loop or wind-up (docs/DEVELOPING.md#the-run-engine)."""
        from returns.result import Failure

        from metaharness.shell.codex.inputs import gathered_inputs
        from metaharness.shell.refusals import refuse

        inputs = gathered_inputs(options)
        if isinstance(inputs, Failure):
            return refuse(inputs.failure())
        from metaharness.shell.codex.run import run_codex

        return run_codex(options, inputs.unwrap())

    def doctor(self) -> int:
        from metaharness.shell.codex.doctor import doctor_codex

        return doctor_codex()

    def vectors(self) -> VectorReport | Refusal:
        from metaharness.pure.codex.vectors import VECTORS
        from metaharness.shell.codex.conformance import run_exchange
        from metaharness.shell.vendor_vectors import vendor_report

        return vendor_report(VECTORS, run_exchange)

    def scripted_child(self) -> ScriptedChild | None:
        return CodexScriptedChild()


LIVE = CodexLive()
