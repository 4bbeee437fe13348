"""The handoff of ``metaharness run`` after its option stages (docs/hermetic.md#refusal-order).

The CLI parses (stage 1) and runs the pure stages 2–4 (``metaharness.pure.options.check_run_options``);
``execute_run`` takes the checked options from there: stages 5–9, the run itself and its wind-up.
"""

from __future__ import annotations

from metaharness.pure.options import RunOptions
from metaharness.shell.adapters import live_adapter_of
from metaharness.shell.substrate import end_trial, start_trial


def execute_run(options: RunOptions) -> int:
    """Run ``options`` (already through stages 1–4) from stage 5 on, returning the exit code of
    docs/hermetic.md#exit-codes. Nothing it does may reach stdout but ``metaharness.event/1`` lines. A confined run's
    substrate trial starts first and runs while the kind's stages load (docs/confinement.md#refusals); a refusal
    before the view's stage took it ends it."""
    if options.confine == "on":
        start_trial()
    try:
        return live_adapter_of(options.kind).run(options)
    finally:
        end_trial()
