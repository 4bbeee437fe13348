"""The b10x loop's live parts behind ``metaharness.shell.adapters.LiveAdapter``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metaharness.pure.refusal import Refusal
from metaharness.shell.live_adapter import ScriptedChild, VectorReport

if TYPE_CHECKING:
    from metaharness.pure.options import RunOptions


class B10xLive:
    """b10x's run, doctor and vectors; its C3 drives the real loop, so it scripts no child."""

    def run(self, options: RunOptions) -> int:
        """Stages 5–7 first, so their refusals import no launch, loop or wind-up (docs/DEVELOPING.md#the-run-engine)."""
        from returns.result import Failure

        from metaharness.shell.b10x.inputs import gathered_inputs
        from metaharness.shell.refusals import refuse

        inputs = gathered_inputs(options)
        if isinstance(inputs, Failure):
            return refuse(inputs.failure())
        from metaharness.shell.b10x.run import run_b10x

        return run_b10x(options, inputs.unwrap())

    def doctor(self) -> int:
        from metaharness.shell.b10x.doctor import doctor_b10x

        return doctor_b10x()

    def vectors(self) -> VectorReport | Refusal:
        from metaharness.pure.b10x.vectors import contract_line, summary_line
        from metaharness.shell.b10x.conformance import VectorUnreadable, run_b10x_vectors

        try:
            verdicts = run_b10x_vectors()
        except VectorUnreadable as error:
            return Refusal("vector-unreadable", str(error))
        results = tuple((verdict.outcome, verdict.line()) for verdict in verdicts)
        return VectorReport(results, summary_line(verdicts), contract_line(verdicts))

    def scripted_child(self) -> ScriptedChild | None:
        return None


LIVE = B10xLive()
