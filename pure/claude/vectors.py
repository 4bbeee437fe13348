"""The nine claude conformance vectors (docs/adapters/claude.md#conformance-vectors,
docs/adapters/common.md#conformance): their inputs and their checks.

C1 plans a launch from fixed inputs and compares the fixture; C2 replays a retained transcript; C3's
exchange runs in the shell's claude conformance runner and is judged here; C4 reads the
captured banner. Vector 4 (the catalogue launch) is synthetic. Records
were captured from the pinned CLI against the project's emulator on the endpoint route
(``provider_emulated``), see ``vectors/claude/README.md``. The verdict shape, the fixture and byte
comparisons and the contract line are every vendor's (``metaharness.pure.conformance``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from metaharness.pure.catalogue import load_catalogue
from metaharness.pure.claude.launch import ClaudeRunSpec, plan_claude_launch
from metaharness.pure.claude.replay import replay_claude, replay_facts
from metaharness.pure.claude.vendor import KIND, PINS
from metaharness.pure.claude.vendor import PROGRAM as VENDOR_PROGRAM
from metaharness.pure.conformance import (
    BRIEF,
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

PROGRAM = "/opt/vendor/bin/claude"
ENDPOINT_ROUTE = EnvironmentDeclaration(kind="claude", credentials="none", model_endpoint=ENDPOINT)
INTERPRETER = "/usr/bin/python3"
"""The Python a C1 catalogue launch serves its catalogue under; the shell names its own CLI with it."""
TOOLS_YAML = (
    b"format: metaharness.catalogue/1\n"
    b"entries:\n"
    b"  - name: read_note\n"
    b"    description: Read one note under notes/.\n"
    b"    performs: file_read\n"
    b"    input:\n"
    b"      path: {type: string, required: true, description: Path relative to the workspace.}\n"
    b"      limit: {type: integer}\n"
)
"""``tools.yaml`` of vector 4: the docs/hermetic.md#catalogue-document example, given in memory."""

LAUNCH_VECTORS: tuple[tuple[str, str, ClaudeRunSpec], ...] = (
    ("c1-launch", "c1/launch.json", ClaudeRunSpec(prompt=PROMPT, decisions="observe", environment=ENDPOINT_ROUTE)),
    (
        "c1-launch-context",
        "c1/launch-context.json",
        ClaudeRunSpec(
            prompt=PROMPT, decisions="observe", cwd=f"{SCRATCH}/work", environment=ENDPOINT_ROUTE, context=(BRIEF,)
        ),
    ),
    (
        "c1-launch-loopback",
        "c1/launch-loopback.json",
        ClaudeRunSpec(
            prompt=PROMPT,
            decisions="observe",
            environment=EnvironmentDeclaration(
                kind="claude",
                credentials="loopback",
                loopback_port=LOOPBACK_PORT,
                loopback_placeholder=LOOPBACK_PLACEHOLDER,
            ),
        ),
    ),
    (
        "c1-launch-catalogue",
        "c1/launch-catalogue.json",
        ClaudeRunSpec(
            prompt=PROMPT,
            decisions="observe",
            environment=ENDPOINT_ROUTE,
            catalogue=load_catalogue(TOOLS_YAML, "tools.yaml").unwrap(),
        ),
    ),
)
"""C1: id, fixture under ``vectors/claude/``, and the run spec (docs/adapters/claude.md#conformance-vectors vectors 1–4;
vector 4 is synthetic: no live catalogue launch has been driven)."""

RECORD_VECTORS: tuple[tuple[str, str], ...] = (("c2-record-bash", "record/bash"), ("c2-record-write", "record/write"))
"""C2: id and record stem (``<stem>.jsonl`` replayed, ``<stem>.expected.jsonl`` expected)."""



def c1_fixture(spec: ClaudeRunSpec, own_cli: tuple[str, ...]) -> dict[str, Any] | str:
    """The C1 fixture of a vector's launch (the program is the vector's input, not a PATH hit; ``own_cli``
    the shell's argv for this build's CLI under :data:`INTERPRETER`), or the refusal that stopped it."""
    spec = msgspec.structs.replace(spec, own_cli=own_cli)
    return planned_fixture(plan_claude_launch(spec, CALLER, SCRATCH, c1_program_facts(VENDOR_PROGRAM)), PROGRAM)


def replay_record(stem: str, record: bytes) -> bytes:
    """C2's stream: ``replay`` with run ``golden``, decisions ``observe``, the record's own path."""
    facts = replay_facts(
        decisions="observe", hermetic="off", transcript_path=f"{stem}.jsonl", harness_version=None, model=None
    )
    return replay_claude(record, facts, RUN)[0]


def claude_vectors(own_cli: tuple[str, ...]) -> VendorVectors[ClaudeRunSpec]:
    """claude's vectors, C1 planned with ``own_cli`` as the catalogue server's argv; C4's banner is
    ``<v> (Claude Code)``."""
    return VendorVectors(
        kind=KIND, pins=PINS, launches=LAUNCH_VECTORS, planned_fixture=lambda spec: c1_fixture(spec, own_cli),
        records=RECORD_VECTORS, replayed=replay_record,
        banner_version=lambda words: words[0] if len(words) == 3 and words[1:] == ["(Claude", "Code)"] else None,
        banner_shape="<version> (Claude Code)", banner_name=KIND,
    )  # fmt: skip
