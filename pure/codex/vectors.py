"""The nine codex conformance vectors (docs/adapters/codex.md#conformance-vectors, docs/adapters/common.md#conformance):
their inputs and their checks.

C1 plans a launch from fixed inputs and compares the fixture; C2 replays a retained rollout; C3's
exchange runs in the shell's codex conformance runner and is judged here; C4 reads the
captured banner. Records were captured from the pinned CLI against the project's emulator on the
endpoint route (``provider_emulated``), see ``vectors/codex/README.md``.
"""

from __future__ import annotations

from typing import Any

from metaharness.pure.codex.launch import CodexRunSpec, plan_codex_launch
from metaharness.pure.codex.replay import replay_launch, replay_rollout
from metaharness.pure.codex.vendor import KIND, PINS
from metaharness.pure.codex.vendor import PROGRAM as VENDOR_PROGRAM
from metaharness.pure.conformance import (
    BRIEF,
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

PROGRAM = "/opt/vendor/bin/codex"


LAUNCH_VECTORS: tuple[tuple[str, str, CodexRunSpec], ...] = (
    (
        "c1-launch",
        "c1/launch.json",
        CodexRunSpec(
            prompt=PROMPT,
            decisions="observe",
            environment=EnvironmentDeclaration(kind="codex", credentials="none", model_endpoint=ENDPOINT),
        ),
    ),
    (
        "c1-launch-context",
        "c1/launch-context.json",
        CodexRunSpec(
            prompt=PROMPT,
            decisions="observe",
            cwd=f"{SCRATCH}/work",
            environment=EnvironmentDeclaration(kind="codex", credentials="none", model_endpoint=ENDPOINT),
            context=(BRIEF,),
        ),
    ),
    (
        "c1-launch-loopback",
        "c1/launch-loopback.json",
        CodexRunSpec(
            prompt=PROMPT,
            decisions="observe",
            environment=EnvironmentDeclaration(
                kind="codex",
                credentials="loopback",
                loopback_port=LOOPBACK_PORT,
                loopback_placeholder=LOOPBACK_PLACEHOLDER,
            ),
        ),
    ),
    (
        "c1-launch-cwd",
        "c1/launch-cwd.json",
        CodexRunSpec(
            prompt=PROMPT,
            decisions="observe",
            cwd=f"{SCRATCH}/work",
            environment=EnvironmentDeclaration(kind="codex", credentials="none", model_endpoint=ENDPOINT),
        ),
    ),
)
"""C1: id, fixture under ``vectors/codex/``, and the run spec (docs/adapters/codex.md#conformance-vectors
vectors 1–4)."""

RECORD_VECTORS: tuple[tuple[str, str], ...] = (
    ("c2-rollout-shell", "record/shell"),
    ("c2-rollout-patch", "record/patch"),
)
"""C2: id and record stem (``<stem>.jsonl`` replayed, ``<stem>.expected.jsonl`` expected)."""



def c1_fixture(spec: CodexRunSpec) -> dict[str, Any] | str:
    """The C1 fixture of a vector's launch (the program is the vector's input, not a PATH hit), or
    the refusal that stopped it."""
    return planned_fixture(plan_codex_launch(spec, CALLER, SCRATCH, c1_program_facts(VENDOR_PROGRAM), walk=C1_WALK), PROGRAM)


def replay_record(stem: str, record: bytes) -> bytes:
    """C2's stream: ``replay`` with run ``golden``, decisions ``observe``, the record's own path."""
    launch = replay_launch(decisions="observe", hermetic="off", transcript_path=f"{stem}.jsonl")
    return replay_rollout(record, launch, RUN)[0]


VECTORS = VendorVectors(
    kind=KIND, pins=PINS, launches=LAUNCH_VECTORS, planned_fixture=c1_fixture, records=RECORD_VECTORS,
    replayed=replay_record, banner_version=lambda words: words[1] if len(words) == 2 and words[0] == "codex-cli" else None,
    banner_shape="codex-cli <version>", banner_name="codex-cli",
)  # fmt: skip
"""codex's vectors; C4's banner is ``codex-cli <v>``."""
