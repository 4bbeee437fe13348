"""A conformance vector's outcome and the lines ``conformance <KIND>`` prints (docs/adapters/common.md#conformance),
and the checks every vendor kind's vectors share: a kind gives its data and its own parts as a
:class:`VendorVectors` (``pure/<kind>/vectors.py``), the checks here judge them the one way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec
from returns.result import Failure, Result

from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import ChildEnvironment, ProgramCandidate
from metaharness.pure.events import ContextFile
from metaharness.pure.hermetic import MemoryWalk
from metaharness.pure.jsonline import canonical
from metaharness.pure.refusal import Refusal
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


HOOK_VECTORS: tuple[tuple[str, str, str], ...] = (
    ("c3-hook-deny", "hook/frame-deny.json", "hook/deny"),
    ("c3-hook-allow", "hook/frame-allow.json", "hook/allow"),
)
"""C3, every vendor kind's: id, sealed frame, and stem (``<stem>.answer`` and ``<stem>.expected.jsonl``); the
record is ``hook/record.jsonl`` and the captured hook request ``hook/request.json``."""
HOOK_RECORD = "hook/record.jsonl"
HOOK_REQUEST = "hook/request.json"
BANNER = "golden/version.txt"
"""C4's captured ``--version`` output, under the kind's ``vectors/<kind>/``."""

Spec = TypeVar("Spec")


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


C1_WALK = MemoryWalk(start="/scratch", hits=(), root_names=())
"""The memory walk a C1 launch is planned over: it found nothing."""


def c1_program_facts(program: str) -> dict[str, ProgramCandidate]:
    """The one PATH hit a C1 launch resolves: ``program`` in the caller's ``~/.local/bin``, an executable file."""
    return {f"{CALLER['HOME']}/.local/bin/{program}": ProgramCandidate(regular=True, executable=True)}


def planned_fixture(planned: Result[VendorLaunch, Refusal], program: str) -> dict[str, Any] | str:
    """The C1 fixture of a planned launch with ``program`` (the vector's input, not the PATH hit) as its program, or
    the line of the refusal that stopped it."""
    if isinstance(planned, Failure):
        refusal: Refusal = planned.failure()
        return refusal.line()
    return {**launch_fixture(planned.unwrap()), "program": program}


class VendorVectors(msgspec.Struct, Generic[Spec], frozen=True, kw_only=True):
    """A vendor kind's vectors: its name and pins, C1's launches (id, fixture file, run spec) and how it plans
    one into a fixture (or the refusal line that stopped it), C2's records (id, stem) and how it replays one,
    and C4's banner: how its version is read from the banner's words and the shape the banner names."""

    kind: str
    pins: tuple[str, ...]
    launches: tuple[tuple[str, str, Spec], ...]
    planned_fixture: Callable[[Spec], dict[str, Any] | str]
    records: tuple[tuple[str, str], ...]
    replayed: Callable[[str, bytes], bytes]
    banner_version: Callable[[list[str]], str | None]
    banner_shape: str
    banner_name: str


def check_launch(vectors: VendorVectors[Spec], vector: str, spec: Spec, fixture: bytes) -> Outcome:
    """C1: the planned launch equals the fixture, compared as parsed JSON."""
    return fixture_outcome(vector, vectors.planned_fixture(spec), fixture)


def check_replay(vectors: VendorVectors[Spec], vector: str, stem: str, record: bytes, expected: bytes) -> Outcome:
    """C2: the stream replayed with run ``golden``, decisions ``observe``, the record's own path, equals the
    expected file byte for byte."""
    return first_difference("C2", vector, expected, vectors.replayed(stem, record))


def check_banner(vectors: VendorVectors[Spec], banner: bytes) -> Outcome:
    """C4: a banner of the kind's shape whose version is on the pin passes, another version warns, another
    shape fails."""
    version = vectors.banner_version(banner.decode("utf-8", "replace").split())
    if version is None or not version[:1].isdigit():
        return Outcome("C4", "c4-version-banner", "FAIL", f"the banner {banner[:80]!r} is not {vectors.banner_shape}")
    if version in vectors.pins:
        return Outcome("C4", "c4-version-banner", "pass")
    detail = f"{vectors.banner_name} {version} is outside the pin ({', '.join(vectors.pins)})"
    return Outcome("C4", "c4-version-banner", "warn", detail)


def contract_line(vectors: VendorVectors[Spec], outcomes: tuple[Outcome, ...]) -> bytes:
    """The ``--contract`` line with ``provider`` ``<kind> <first pin>`` (docs/adapters/common.md#conformance)."""
    return provider_contract_line(f"{vectors.kind} {vectors.pins[0]}", outcomes)


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
