"""``metaharness doctor <KIND>``: the binary the spawn would run, its pin and its flags (spec 10 §7)."""

from __future__ import annotations

from metaharness.pure.refusal import Refusal
from metaharness.shell.refusals import refuse


def run_doctor(kind: str) -> int:
    """Resolve, probe and flag-check ``kind``'s binary; the exit of spec 10 §7. Not built yet:
    refuses ``not-built``."""
    return refuse(
        Refusal(
            "not-built",
            f"doctor {kind} is not built in this build: it waits for the kind's launch flags and version "
            "probe (spec 40 §8, spec 50 §7)",
        )
    )
