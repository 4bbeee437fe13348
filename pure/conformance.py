"""A conformance vector's outcome and the lines ``conformance <KIND>`` prints (docs/adapters/common.md#conformance),
shared by the claude and codex vectors (docs/adapters/common.md#conformance)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import ChildEnvironment
from metaharness.pure.events import ContextFile
from metaharness.pure.jsonline import canonical
from metaharness.pure.scratch import ScratchFile

Tier = Literal["C1", "C2", "C3", "C4"]
Status = Literal["pass", "FAIL", "warn"]

CALLER = {"HOME": "/operator"}
"""The fixed inputs every vendor vector plans from (docs/adapters/common.md#conformance): the caller, the scratch root,
the run id, the endpoint route, the loopback port and placeholder, the task and one context file."""
SCRATCH = "/scratch/run"
RUN = "golden"
ENDPOINT = "http://127.0.0.1:41237"
LOOPBACK_PORT = "41237"
LOOPBACK_PLACEHOLDER = "mh-run-golden-000000000000000000000000"
PROMPT = "run the check"
BRIEF = ContextFileRead(
    "docs/brief.md",
    b"# Brief\n\nShip the parser.\n",
    "74608a6e8df25f2add98a17f8dbb04af6f4f81a7d12de2cb9d68aed2a29d1793",
)


class Outcome(msgspec.Struct, frozen=True):
    """One vector's verdict: its tier, id, status and, unless it passed, why."""

    tier: Tier
    id: str
    status: Status
    detail: str = ""

    def line(self) -> str:
        """``pass C1 c1-launch`` or ``FAIL C2 … — <detail>`` (docs/adapters/common.md#conformance)."""
        return f"{self.status} {self.tier} {self.id}" + (f" — {self.detail}" if self.detail else "")


class VendorLaunch(Protocol):
    """What a claude or codex launch shows its C1 fixture."""

    @property
    def program(self) -> str: ...
    @property
    def args(self) -> tuple[str, ...]: ...
    @property
    def environment(self) -> ChildEnvironment: ...
    @property
    def cwd(self) -> str: ...
    @property
    def files(self) -> tuple[ScratchFile, ...]: ...
    @property
    def context_files(self) -> tuple[ContextFile, ...]: ...


def launch_fixture(launch: VendorLaunch) -> dict[str, object]:
    """The C1 conformance fixture of a vendor launch (docs/adapters/common.md#conformance, shape of
    docs/adapters/b10x.md#conformance-vectors): program, args, env, cwd, files sorted by path as {path, sha256, bytes},
    and ``context_files`` when any was declared."""
    fixture: dict[str, object] = {
        "program": launch.program,
        "args": list(launch.args),
        "env": launch.environment.as_dict(),
        "cwd": launch.cwd,
        "files": [{"path": f.path, "sha256": f.sha256, "bytes": len(f.data)} for f in launch.files],
    }
    if launch.context_files:
        fixture["context_files"] = [msgspec.to_builtins(item) for item in launch.context_files]
    return fixture


def fixture_outcome(vector: str, got: Any, fixture: bytes) -> Outcome:
    """C1: the planned launch's fixture (or the refusal line that stopped it) against the vector's
    fixture file, compared as parsed JSON; a failure names the keys that differ."""
    expected = msgspec.json.decode(fixture)
    if got == expected:
        return Outcome("C1", vector, "pass")
    if isinstance(got, str):
        return Outcome("C1", vector, "FAIL", got)
    keys = [key for key in sorted(set(expected) | set(got)) if expected.get(key) != got.get(key)]
    return Outcome("C1", vector, "FAIL", f"{', '.join(keys)} differ from the fixture")


def first_difference(tier: Tier, vector: str, expected: bytes, got: bytes) -> Outcome:
    """``pass`` when byte-equal, else ``FAIL`` naming the first line that differs."""
    if expected == got:
        return Outcome(tier, vector, "pass")
    want, have = expected.splitlines(), got.splitlines()
    for number, (a, b) in enumerate(zip(want, have, strict=False), start=1):
        if a != b:
            return Outcome(tier, vector, "FAIL", f"line {number} differs: expected {a[:120]!r}, got {b[:120]!r}")
    return Outcome(tier, vector, "FAIL", f"expected {len(want)} line(s), got {len(have)}")


def check_exchange(vector: str, answer: bytes, expected_answer: bytes, stream: bytes, expected: bytes) -> Outcome:
    """C3: the hook's answer bytes equal the ``.answer`` file, and the stream the expected file."""
    if answer != expected_answer:
        return Outcome("C3", vector, "FAIL", f"the hook answered {answer[:160]!r}, expected {expected_answer[:160]!r}")
    return first_difference("C3", vector, expected, stream)


def summary_line(outcomes: tuple[Outcome, ...]) -> str:
    """``<N> vectors, <F> failed — no model, no network, no credential`` (docs/adapters/common.md#conformance)."""
    failed = sum(outcome.status == "FAIL" for outcome in outcomes)
    return f"{len(outcomes)} vectors, {failed} failed — no model, no network, no credential"


def provider_contract_line(provider: str, outcomes: tuple[Outcome, ...]) -> bytes:
    """The ``--contract`` line, keys sorted; ``breaking_changes`` counts failed record-tier vectors
    (docs/adapters/common.md#conformance)."""
    failed = [outcome for outcome in outcomes if outcome.status == "FAIL"]
    document = {
        "breaking_changes": sum(outcome.tier in ("C2", "C3", "C4") for outcome in failed),
        "checked": len(outcomes),
        "consumer": "metaharness.event/1",
        "failed": len(failed),
        "kind": "contract_result",
        "provider": provider,
    }
    return canonical(document) + b"\n"
