"""``metaharness conformance <KIND> [--contract]``: the kind's deterministic vectors
(docs/adapters/common.md#conformance).

Each kind's shell module runs its vectors; this one prints them the one way docs/adapters/common.md#conformance says:
one line per vector and the summary, or under ``--contract`` only the contract line, with every vector that did
not pass on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from metaharness.pure.kind import Kind
from metaharness.pure.refusal import Refusal
from metaharness.shell.adapters import live_adapter_of
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


def run_conformance(kind: Kind, contract: bool) -> int:
    """Run ``kind``'s vectors and print their lines (or the ``--contract`` line); the exit of
    docs/adapters/common.md#conformance: 0 when none failed, 1 when one did, 2 when a vector cannot be loaded."""
    report = live_adapter_of(kind).vectors()
    if isinstance(report, Refusal):
        return refuse(report)
    return print_vectors(report.results, report.summary, report.contract if contract else None)
