"""``metaharness conformance <KIND> [--contract]``: the kind's deterministic vectors (spec 10 §6).

Each kind's shell module runs its vectors; this one prints them the one way spec 10 §6 says: one line
per vector and the summary, or under ``--contract`` only the contract line, with every vector that did
not pass on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from metaharness.pure.refusal import Refusal
from metaharness.shell.refusals import refuse


def print_vectors(results: Sequence[tuple[str, str]], summary: str, contract: bytes | None) -> int:
    """``results`` are (status, line) per vector; exit 0 when none failed, else 1."""
    if contract is not None:
        for status, line in results:
            if status != "pass":
                sys.stderr.write(f"metaharness: {line}\n")
        sys.stdout.buffer.write(contract)
    else:
        sys.stdout.write("".join(line + "\n" for _, line in results) + summary + "\n")
    sys.stdout.flush()
    return 1 if any(status == "FAIL" for status, _ in results) else 0


def run_conformance(kind: str, contract: bool) -> int:
    """Run ``kind``'s vectors and print their lines (or the ``--contract`` line); the exit of
    spec 10 §6: 0 when none failed, 1 when one did, 2 when a vector cannot be loaded."""
    if kind in ("claude", "codex"):
        from metaharness.pure.conformance import summary_line

        if kind == "claude":
            from metaharness.pure.claude.vectors import contract_line
            from metaharness.shell.claude.conformance import claude_outcomes as outcomes_of
        else:
            from metaharness.pure.codex.vectors import contract_line
            from metaharness.shell.codex.conformance import codex_outcomes as outcomes_of
        outcomes = outcomes_of()
        results = [(outcome.status, outcome.line()) for outcome in outcomes]
        return print_vectors(results, summary_line(outcomes), contract_line(outcomes) if contract else None)
    from metaharness.pure.b10x.vectors import contract_line as b10x_contract_line
    from metaharness.pure.b10x.vectors import summary_line as b10x_summary_line
    from metaharness.shell.b10x.conformance import VectorUnreadable, run_b10x_vectors

    try:
        verdicts = run_b10x_vectors()
    except VectorUnreadable as error:
        return refuse(Refusal("vector-unreadable", str(error)))
    results = [(verdict.outcome, verdict.line()) for verdict in verdicts]
    return print_vectors(results, b10x_summary_line(verdicts), b10x_contract_line(verdicts) if contract else None)
