"""The eleven deterministic conformance vectors of ``conformance b10x`` (docs/adapters/b10x.md#conformance-vectors,
docs/adapters/common.md#conformance).

Each vector names its tier, its data under ``vectors/b10x/`` and its fixed inputs; the checks here are
pure over the loaded bytes (C1 plans a launch, C2 replays a record, C4 reads a banner). C3 needs the
live run loop and a scripted child, so the shell drives it and :func:`compare_lines` judges it.
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec
from returns.result import Failure

from metaharness.pure.b10x.admissibility import check_frame_admissible
from metaharness.pure.b10x.launch import B10xLaunchFacts, launch_fixture, plan_b10x_launch, version_token
from metaharness.pure.b10x.replay import replay_b10x, replay_hermetic, replay_settings
from metaharness.pure.b10x.seam import SeamSettings
from metaharness.pure.b10x.vendor import PIN, PROGRAM
from metaharness.pure.context import ContextFileRead
from metaharness.pure.events import Transcript
from metaharness.pure.frames import Frame, load_frame
from metaharness.pure.jsonline import canonical, sha256_hex
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal

Tier = Literal["C1", "C2", "C3", "C4"]
Outcome = Literal["pass", "FAIL", "warn"]

RUN_ID = "golden"
MODEL = "b10x-emulated"
ENDPOINT = "https://example.invalid/v1"
C1_PROGRAM = "/opt/b10x/bin/b10x-harness"
C1_HOME = "/operator"
C1_SCRATCH = "/scratch/run"
C1_WORKSPACE = "/scratch/run/work"
BRIEF = b"# Brief\n\nShip the parser.\n"
PLAN = b"- step one\n- step two\n"


class Vector(msgspec.Struct, frozen=True, kw_only=True):
    """One vector: its number, id and tier, and the files it reads under ``vectors/b10x/``."""

    number: int
    id: str
    tier: Tier
    fixture: str | None = None
    frame: str | None = None
    record: str | None = None
    expected: str | None = None
    stdin: str | None = None
    banner: str | None = None


VECTORS: tuple[Vector, ...] = (
    Vector(number=1, id="c1-launch", tier="C1", fixture="c1/launch.json"),
    Vector(number=2, id="c1-launch-context", tier="C1", fixture="c1/launch-context.json"),
    Vector(number=3, id="c1-launch-caller-seam", tier="C1", fixture="c1/launch-caller-seam.json", frame="caller/frame-allow.json"),
    Vector(number=4, id="c2-golden-loop-record", tier="C2", record="golden/loop.jsonl", expected="golden/loop.expected.jsonl"),
    Vector(
        number=5,
        id="c2-unpublished-tool",
        tier="C2",
        record="enforcement/unpublished.jsonl",
        expected="enforcement/unpublished.expected.jsonl",
    ),
    Vector(
        number=6,
        id="c2-approval-denied",
        tier="C2",
        record="enforcement/approval-denied.jsonl",
        expected="enforcement/approval-denied.expected.jsonl",
    ),
    Vector(
        number=7,
        id="c2-budget-stop",
        tier="C2",
        record="enforcement/budget-stop.jsonl",
        expected="enforcement/budget-stop.expected.jsonl",
    ),
    Vector(
        number=8,
        id="c2-cancellation",
        tier="C2",
        record="enforcement/cancelled.jsonl",
        expected="enforcement/cancelled.expected.jsonl",
    ),
    Vector(
        number=9,
        id="c3-caller-allow",
        tier="C3",
        frame="caller/frame-allow.json",
        record="caller/allow.jsonl",
        stdin="caller/allow.stdin",
        expected="caller/allow.expected.jsonl",
    ),
    Vector(
        number=10,
        id="c3-caller-deny",
        tier="C3",
        frame="caller/frame-deny.json",
        record="caller/deny.jsonl",
        stdin="caller/deny.stdin",
        expected="caller/deny.expected.jsonl",
    ),
    Vector(number=11, id="c4-version-banner", tier="C4", banner="golden/version.txt"),
)
"""The vectors in docs/adapters/b10x.md#conformance-vectors's order."""

BANNER_VERSION_FILE = "golden/version.txt"


class Verdict(msgspec.Struct, frozen=True):
    """One vector's outcome and, unless it passed, what it found."""

    vector: Vector
    outcome: Outcome
    detail: str = ""

    def line(self) -> str:
        """``pass C1 c1-launch``, ``FAIL C2 … — <detail>``, ``warn C4 … — <detail>``
        (docs/adapters/common.md#conformance)."""
        head = f"{self.outcome} {self.vector.tier} {self.vector.id}"
        return head if not self.detail else f"{head} — {self.detail}"


def c1_inputs(number: int, frame: Frame | None = None) -> tuple[RunOptions, B10xLaunchFacts]:
    """The fixed inputs of vectors 1–3 (docs/adapters/b10x.md#conformance-vectors C1)."""
    options = RunOptions(
        kind="b10x",
        decisions="observe",
        prompt="observe this run",
        model=MODEL,
        model_endpoint=ENDPOINT,
        credentials="none",
    )
    facts = B10xLaunchFacts(caller_env={"HOME": C1_HOME}, caller_cwd="/", scratch=C1_SCRATCH, program=C1_PROGRAM)
    if number == 2:
        options = msgspec.structs.replace(options, cwd=C1_WORKSPACE, context=("docs/brief.md", "notes/plan.md"))
        context = (
            ContextFileRead("docs/brief.md", BRIEF, sha256_hex(BRIEF)),
            ContextFileRead("notes/plan.md", PLAN, sha256_hex(PLAN)),
        )
        facts = msgspec.structs.replace(facts, context=context)
    if number == 3:
        options = msgspec.structs.replace(
            options,
            decisions="frame",
            frame="caller/frame-allow.json",
            model_wire="anthropic-messages",
            prompt="write the note",
        )
    return options, facts


def c1_fixture(number: int, frame_bytes: bytes | None) -> dict[str, object] | str:
    """The launch fixture vectors 1–3 plan, or why planning failed."""
    frame = None
    if frame_bytes is not None:
        loaded = load_frame(frame_bytes)
        if isinstance(loaded, Failure):
            return f"the vector's frame does not load: {loaded.failure().message}"
        admissible = check_frame_admissible(loaded.unwrap())
        if isinstance(admissible, Failure):
            refusal: Refusal = admissible.failure()
            return refusal.message
        frame = admissible.unwrap()
    options, facts = c1_inputs(number, frame)
    planned = plan_b10x_launch(options, facts)
    if isinstance(planned, Failure):
        return f"{planned.failure().code}: {planned.failure().message}"
    return launch_fixture(planned.unwrap())


def check_c1(vector: Vector, fixture: bytes, frame_bytes: bytes | None) -> Verdict:
    """C1: the planned launch equals the fixture, compared as parsed JSON."""
    planned = c1_fixture(vector.number, frame_bytes)
    if isinstance(planned, str):
        return Verdict(vector, "FAIL", planned)
    try:
        expected = msgspec.json.decode(fixture)
    except msgspec.DecodeError as error:
        return Verdict(vector, "FAIL", f"the fixture is not JSON: {error}")
    if planned == expected:
        return Verdict(vector, "pass")
    differing = sorted(key for key in {*planned, *expected} if planned.get(key) != expected.get(key))
    key = differing[0]
    return Verdict(
        vector,
        "FAIL",
        f"{key} differs: expected {canonical(expected.get(key)).decode()}, got {canonical(planned.get(key)).decode()}",
    )


def banner_version(banner: bytes) -> str | None:
    """The version token of the captured banner (C2's and C3's harness version)."""
    return version_token(banner.decode("utf-8", "replace"))


def c2_settings(vector: Vector, banner: bytes, decisions: Literal["observe", "frame"] = "observe") -> SeamSettings:
    """The replay of docs/adapters/b10x.md#conformance-vectors C2: run ``golden``, the banner's version, model
    ``b10x-emulated``, the record's path under ``vectors/b10x/``."""
    assert vector.record is not None
    return replay_settings(
        run=RUN_ID, decisions=decisions, harness_version=banner_version(banner), model=MODEL, transcript_path=vector.record
    )


def c3_settings(vector: Vector, banner: bytes, frame: Frame) -> SeamSettings:
    """The live run of docs/adapters/b10x.md#conformance-vectors C3: decisions ``frame`` with the vector's frame, C2's
    version and model, the replay's transcript and attestation blocks."""
    assert vector.record is not None
    return SeamSettings(
        run=RUN_ID,
        mode="frame",
        model=MODEL,
        harness_version=banner_version(banner),
        transcript=Transcript(path=vector.record, digest=None, bytes=None),
        hermetic=replay_hermetic("off", "frame"),
        frame=frame,
    )


def compare_lines(vector: Vector, expected: bytes, got: bytes, what: str = "line") -> Verdict:
    """Byte-for-byte comparison naming the first differing line."""
    if expected == got:
        return Verdict(vector, "pass")
    left, right = expected.split(b"\n"), got.split(b"\n")
    for index, (one, other) in enumerate(zip(left, right, strict=False), start=1):
        if one != other:
            return Verdict(vector, "FAIL", f"{what} {index} differs: expected {one.decode(errors='replace')}, got {other.decode(errors='replace')}")
    shorter = min(len(left), len(right))
    return Verdict(vector, "FAIL", f"{what} {shorter + 1} differs: one side ends after {shorter} line(s)")


def check_c2(vector: Vector, record: bytes, expected: bytes, banner: bytes) -> Verdict:
    """C2: the replay of the retained record equals the expected stream byte for byte."""
    return compare_lines(vector, expected, replay_b10x(c2_settings(vector, banner), record).stream)


_BANNER = re.compile(rf"^{PROGRAM} (\S+)\n?$")


def check_c4(vector: Vector, banner: bytes) -> Verdict:
    """C4: ``b10x-harness <v>`` — ``v`` on the pin passes, another ``v`` is ``warn`` naming both, another
    shape fails."""
    text = banner.decode("utf-8", "replace")
    found = _BANNER.match(text)
    if found is None:
        return Verdict(vector, "FAIL", f"the banner {text.strip()!r} is not `{PROGRAM} <version>`")
    if found.group(1) == PIN:
        return Verdict(vector, "pass")
    return Verdict(vector, "warn", f"{PROGRAM} {found.group(1)} is outside the pin ({PIN})")


def contract_line(verdicts: tuple[Verdict, ...]) -> bytes:
    """The ``--contract`` line, keys sorted (docs/adapters/common.md#conformance,
    docs/adapters/b10x.md#conformance-vectors)."""
    failed = [v for v in verdicts if v.outcome == "FAIL"]
    return (
        canonical(
            {
                "breaking_changes": sum(v.vector.tier in ("C2", "C3", "C4") for v in failed),
                "checked": len(verdicts),
                "consumer": "metaharness.event/1",
                "failed": len(failed),
                "kind": "contract_result",
                "provider": f"b10x {PIN}",
            }
        )
        + b"\n"
    )


def summary_line(verdicts: tuple[Verdict, ...]) -> str:
    """``11 vectors, <F> failed — no model, no network, no credential``."""
    failed = sum(v.outcome == "FAIL" for v in verdicts)
    return f"{len(verdicts)} vectors, {failed} failed — no model, no network, no credential"
