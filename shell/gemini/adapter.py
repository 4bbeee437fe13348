"""Gemini CLI's live parts behind ``metaharness.shell.adapters.LiveAdapter``."""

from __future__ import annotations

import subprocess
import sys
from typing import IO, TYPE_CHECKING

from metaharness.pure.refusal import Refusal
from metaharness.shell.live_adapter import record_object

if TYPE_CHECKING:
    from metaharness.pure.options import RunOptions
    from metaharness.shell.live_adapter import ScriptedChild, VectorReport


class GeminiScriptedChild:
    """Gemini CLI writes its stream-json record on stdout and announces a call in a ``tool_use`` line."""

    def announces_call(self, line: bytes) -> bool:
        """The line is a ``tool_use``."""
        return record_object(line).get("type") == "tool_use"

    def record_sink(self) -> IO[bytes]:
        """stdout."""
        return sys.stdout.buffer

    def start(self) -> None:
        """Gemini CLI needs nothing before its first record line."""

    def ask(self, hook: str, question: bytes) -> bytes:
        """The scratch hook program, run with the request on its stdin: what it printed."""
        return subprocess.run([hook], input=question, capture_output=True, check=False).stdout


class GeminiLive:
    """gemini's run, doctor, vectors and scripted child."""

    def run(self, options: RunOptions) -> int:
        """Stages 5–6 first, so their refusals import no launch, loop or wind-up (docs/DEVELOPING.md#the-run-engine)."""
        from returns.result import Failure

        from metaharness.shell.gemini.inputs import gathered_inputs
        from metaharness.shell.refusals import refuse

        inputs = gathered_inputs(options)
        if isinstance(inputs, Failure):
            return refuse(inputs.failure())
        from metaharness.shell.gemini.run import run_gemini

        return run_gemini(options, inputs.unwrap())

    def doctor(self) -> int:
        from metaharness.shell.gemini.doctor import run_gemini_doctor

        return run_gemini_doctor()

    def vectors(self) -> VectorReport | Refusal:
        from metaharness.pure.gemini.vectors import VECTORS
        from metaharness.shell.gemini.conformance import run_exchange
        from metaharness.shell.vendor_vectors import vendor_report

        return vendor_report(VECTORS, run_exchange)

    def scripted_child(self) -> ScriptedChild | None:
        return GeminiScriptedChild()


LIVE = GeminiLive()
