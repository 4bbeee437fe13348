"""``metaharness conformance <KIND> [--contract]``: the kind's deterministic vectors (spec 10 §6)."""

from __future__ import annotations

from metaharness.pure.refusal import Refusal
from metaharness.shell.refusals import refuse


def run_conformance(kind: str, contract: bool) -> int:
    """Run ``kind``'s vectors and print their lines (or the ``--contract`` line); the exit of
    spec 10 §6. Not built yet: refuses ``not-built``."""
    return refuse(
        Refusal(
            "not-built",
            f"conformance {kind} is not built in this build: it waits for the kind's vectors "
            "(spec 40 §10, spec 50 §9)",
        )
    )
