"""The nine codex conformance vectors (docs/adapters/codex.md#conformance-vectors, docs/adapters/common.md#conformance):
their inputs and their checks.

C1 plans a launch from fixed inputs and compares the fixture; C2 replays a retained rollout; C3's
exchange runs in the shell's codex conformance runner and is judged here; C4 reads the
captured banner. Records were captured from the pinned CLI against the project's emulator on the
endpoint route (``provider_emulated``), see ``vectors/codex/README.md``.
"""

from __future__ import annotations

from typing import Any

import msgspec
from returns.result import Failure

from metaharness.pure.codex.launch import CodexRunSpec, plan_codex_launch
from metaharness.pure.codex.replay import replay_launch, replay_rollout
from metaharness.pure.codex.vendor import PINS
from metaharness.pure.conformance import (
    BRIEF,
    CALLER,
    ENDPOINT,
    LOOPBACK_PLACEHOLDER,
    LOOPBACK_PORT,
    PROMPT,
    RUN,
    SCRATCH,
    Outcome,
    first_difference,
    fixture_outcome,
    launch_fixture,
    provider_contract_line,
)
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.hermetic import MemoryWalk
from metaharness.pure.refusal import Refusal

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

HOOK_VECTORS: tuple[tuple[str, str, str], ...] = (
    ("c3-hook-deny", "hook/frame-deny.json", "hook/deny"),
    ("c3-hook-allow", "hook/frame-allow.json", "hook/allow"),
)
"""C3: id, sealed frame, and stem (``<stem>.answer`` and ``<stem>.expected.jsonl``); the record is
``hook/record.jsonl`` and the captured hook request ``hook/request.json``."""

HOOK_RECORD = "hook/record.jsonl"
HOOK_REQUEST = "hook/request.json"
BANNER = "golden/version.txt"


def planned_fixture(spec: CodexRunSpec) -> dict[str, Any] | str:
    """The C1 fixture of a vector's launch (the program is the vector's input, not a PATH hit), or
    the refusal that stopped it."""
    facts = {f"{CALLER['HOME']}/.local/bin/codex": ProgramCandidate(regular=True, executable=True)}
    walk = MemoryWalk(start="/scratch", hits=(), root_names=())
    planned = plan_codex_launch(spec, CALLER, SCRATCH, facts, walk=walk)
    if isinstance(planned, Failure):
        refusal: Refusal = planned.failure()
        return refusal.line()
    return launch_fixture(msgspec.structs.replace(planned.unwrap(), program=PROGRAM))


def check_launch(vector: str, spec: CodexRunSpec, fixture: bytes) -> Outcome:
    """C1: the planned launch equals the fixture, compared as parsed JSON."""
    return fixture_outcome(vector, planned_fixture(spec), fixture)


def replay_record(stem: str, record: bytes) -> bytes:
    """C2's stream: ``replay`` with run ``golden``, decisions ``observe``, the record's own path."""
    launch = replay_launch(decisions="observe", hermetic="off", transcript_path=f"{stem}.jsonl")
    return replay_rollout(record, launch, RUN)[0]


def check_replay(vector: str, stem: str, record: bytes, expected: bytes) -> Outcome:
    """C2: the replayed stream equals the expected file byte for byte."""
    return first_difference("C2", vector, expected, replay_record(stem, record))


def check_banner(banner: bytes) -> Outcome:
    """C4: ``codex-cli <v>``; ``v`` on the pin passes, another version warns, another shape fails."""
    words = banner.decode("utf-8", "replace").split()
    if len(words) != 2 or words[0] != "codex-cli" or not words[1][:1].isdigit():
        return Outcome("C4", "c4-version-banner", "FAIL", f"the banner {banner[:80]!r} is not codex-cli <version>")
    if words[1] in PINS:
        return Outcome("C4", "c4-version-banner", "pass")
    return Outcome("C4", "c4-version-banner", "warn", f"codex-cli {words[1]} is outside the pin ({', '.join(PINS)})")



def contract_line(outcomes: tuple[Outcome, ...]) -> bytes:
    """The ``--contract`` line with ``provider`` ``codex <first pin>`` (docs/adapters/common.md#conformance)."""
    return provider_contract_line(f"codex {PINS[0]}", outcomes)
