"""The gemini conformance vectors (docs/adapters/gemini.md#conformance, docs/adapters/common.md#conformance): their
inputs and their checks.

C1 plans a launch from fixed inputs and compares the fixture; C2 replays a retained stream-json record; C3's
exchange runs in the shell's gemini conformance runner and is judged here; C4 reads the captured banner. Records
were captured from the pinned CLI against the project's emulator on the endpoint route (``provider_emulated``),
see ``vectors/gemini/README.md``.
"""

from __future__ import annotations

from typing import Any

from metaharness.pure.adapter import ReplayRequest
from metaharness.pure.conformance import (
    C1_WALK,
    CALLER,
    ENDPOINT,
    LOOPBACK_PLACEHOLDER,
    LOOPBACK_PORT,
    PROMPT,
    RUN,
    SCRATCH,
    VendorVectors,
    c1_program_facts,
    planned_fixture,
)
from metaharness.pure.environment import EnvironmentDeclaration
from metaharness.pure.gemini.adapter import KIND, PINS
from metaharness.pure.gemini.adapter import PROGRAM as VENDOR_PROGRAM
from metaharness.pure.gemini.launch import GeminiRunSpec, plan_gemini_launch
from metaharness.pure.gemini.replay import replay_record

PROGRAM = "/opt/vendor/bin/gemini"

LAUNCH_VECTORS: tuple[tuple[str, str, GeminiRunSpec], ...] = (
    ("c1-launch", "c1/launch.json", GeminiRunSpec(
        prompt=PROMPT, decisions="observe",
        environment=EnvironmentDeclaration(kind=KIND, credentials="none", model_endpoint=ENDPOINT))),
    ("c1-launch-loopback", "c1/launch-loopback.json", GeminiRunSpec(
        prompt=PROMPT, decisions="observe",
        environment=EnvironmentDeclaration(kind=KIND, credentials="loopback", loopback_port=LOOPBACK_PORT,
                                           loopback_placeholder=LOOPBACK_PLACEHOLDER))),
)  # fmt: skip
"""C1: id, fixture under ``vectors/gemini/``, and the run spec."""

RECORD_VECTORS: tuple[tuple[str, str], ...] = (("c2-record-write", "record/write"), ("c2-record-shell", "record/shell"))
"""C2: id and record stem (``<stem>.jsonl`` replayed, ``<stem>.expected.jsonl`` expected)."""



def c1_fixture(spec: GeminiRunSpec) -> dict[str, Any] | str:
    """The C1 fixture of a vector's launch (the program is the vector's input, not a PATH hit), or the refusal
    that stopped it."""
    custody = None if spec.environment.credentials != "loopback" else f"{CALLER['HOME']}/.gemini/.env"
    upstream = None if custody is None else "https://generativelanguage.googleapis.com"
    planned = plan_gemini_launch(spec, CALLER, SCRATCH, c1_program_facts(VENDOR_PROGRAM), walk=C1_WALK, custody_path=custody,
                                 upstream=upstream)  # fmt: skip
    return planned_fixture(planned, PROGRAM)


def replayed(stem: str, record: bytes) -> bytes:
    """C2's stream: ``replay`` with run ``golden``, decisions ``observe``, the record's own path."""
    return replay_record(record, ReplayRequest(run_id=RUN, transcript_path=f"{stem}.jsonl"))[0]


VECTORS = VendorVectors(
    kind=KIND, pins=PINS, launches=LAUNCH_VECTORS, planned_fixture=c1_fixture, records=RECORD_VECTORS,
    replayed=replayed, banner_version=lambda words: words[0] if len(words) == 1 else None,
    banner_shape="<version>", banner_name=KIND,
)  # fmt: skip
"""gemini's vectors; C4's banner is ``<v>`` alone."""
