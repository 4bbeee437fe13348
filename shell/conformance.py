"""``metaharness conformance <KIND> [--contract]``: the kind's deterministic vectors (spec 10 §6)."""

from __future__ import annotations

import sys

from metaharness.pure.refusal import Refusal
from metaharness.shell.refusals import refuse


def run_conformance(kind: str, contract: bool) -> int:
    """Run ``kind``'s vectors and print their lines (or the ``--contract`` line); the exit of
    spec 10 §6: 0 when none failed, 1 when one did, 2 when a vector cannot be loaded."""
    if kind == "claude":
        from metaharness.shell.claude.conformance import run_claude_conformance

        return run_claude_conformance(contract)
    if kind == "codex":
        from metaharness.shell.codex.conformance import conformance_codex

        return conformance_codex(contract)
    from metaharness.pure.b10x.vectors import contract_line, summary_line
    from metaharness.shell.b10x.conformance import VectorUnreadable, run_b10x_vectors

    try:
        verdicts = run_b10x_vectors()
    except VectorUnreadable as error:
        return refuse(Refusal("vector-unreadable", str(error)))
    if contract:
        for verdict in verdicts:
            if verdict.outcome != "pass":
                sys.stderr.write(f"metaharness: {verdict.line()}\n")
        sys.stdout.buffer.write(contract_line(verdicts))
    else:
        sys.stdout.write("".join(verdict.line() + "\n" for verdict in verdicts) + summary_line(verdicts) + "\n")
    sys.stdout.flush()
    return 1 if any(verdict.outcome == "FAIL" for verdict in verdicts) else 0
