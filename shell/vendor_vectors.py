"""A vendor kind's conformance run (docs/adapters/common.md#conformance): its packaged ``vectors/<kind>/`` files
read, every tier judged in order (C1 launches, C2 records, C3 the two hook exchanges, C4 the banner) by the
checks of ``metaharness.pure.conformance``; C3 through the kind's own live loop against the scripted child
(``metaharness.shell.conformance_child``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.resources import files
from typing import TypeVar

import msgspec

from metaharness.pure.conformance import (
    BANNER,
    HOOK_RECORD,
    HOOK_REQUEST,
    HOOK_VECTORS,
    Outcome,
    Spec,
    VendorVectors,
    check_banner,
    check_exchange,
    check_launch,
    check_replay,
    contract_line,
    summary_line,
)
from metaharness.pure.kind import Kind
from metaharness.shell.live_adapter import VectorReport
from metaharness.shell.scripted_child import stage_scripted_child

Launch = TypeVar("Launch", bound=msgspec.Struct)

Exchange = Callable[[str], tuple[bytes, bytes]]
"""C3 for one sealed frame file: the hook's answer bytes and the stream the kind's live loop wrote."""


def vector_file(kind: str, name: str) -> bytes:
    """A packaged file under ``vectors/<kind>/``."""
    return files("metaharness.vectors").joinpath(kind, name).read_bytes()


def scripted_launch(kind: Kind, planned: Launch, scratch: str) -> tuple[Launch, str]:
    """C3's launch: the planned one with the scripted child in the vendor's place (this interpreter, cwd the
    scratch root), and the path the child writes the hook's answer to."""
    record, request = vector_file(kind, HOOK_RECORD), vector_file(kind, HOOK_REQUEST)
    child, answer = stage_scripted_child(kind, scratch, record, request)
    return msgspec.structs.replace(planned, program=sys.executable, args=child, cwd=scratch), answer


def vendor_outcomes(vectors: VendorVectors[Spec], run_exchange: Exchange) -> tuple[Outcome, ...]:
    """Every vector's outcome, in the order of the kind's page."""
    kind = vectors.kind
    outcomes = [check_launch(vectors, vector, spec, vector_file(kind, fixture)) for vector, fixture, spec in vectors.launches]
    outcomes += [
        check_replay(vectors, vector, stem, vector_file(kind, f"{stem}.jsonl"), vector_file(kind, f"{stem}.expected.jsonl"))
        for vector, stem in vectors.records
    ]
    for vector, frame_file, stem in HOOK_VECTORS:
        answer, stream = run_exchange(frame_file)
        expected = vector_file(kind, f"{stem}.expected.jsonl")
        outcomes.append(check_exchange(vector, answer, vector_file(kind, f"{stem}.answer"), stream, expected))
    outcomes.append(check_banner(vectors, vector_file(kind, BANNER)))
    return tuple(outcomes)


def vendor_report(vectors: VendorVectors[Spec], run_exchange: Exchange) -> VectorReport:
    """The vectors' lines, summary and contract line, for ``conformance <KIND>``."""
    outcomes = vendor_outcomes(vectors, run_exchange)
    results = tuple((outcome.status, outcome.line()) for outcome in outcomes)
    return VectorReport(results, summary_line(outcomes), contract_line(vectors, outcomes))
