"""The audit report on stderr and the exit of an audited run (docs/hermetic.md#auditor, #audit-report, #audited-exit,
docs/hermetic.md#hermetic-modes).

``audit_report`` renders the sections (a)–(f) of docs/hermetic.md#audit-report from the run's facts; ``audited_exit``
decides the exit of docs/hermetic.md#audited-exit; ``auditor_outcome`` reads the auditor's exit and stdout;
``recheck_audit`` repeats the audit pairing after the session against what was recorded at start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.census import stream_census
from metaharness.pure.events import (
    Census,
    Event,
    Exited,
    Process,
    SessionEnded,
    SessionStarted,
    Signaled,
    StreamClosed,
    UnknownProcess,
    WarningRaised,
    Withheld,
)
from metaharness.pure.hermetic import RowVerdict, Verdict, VerdictFacts, control_verdict, row_verdicts
from metaharness.pure.jsonline import compact
from metaharness.pure.options import AuditFacts, AuditPairing, RunOptions, check_audit_pairing
from metaharness.pure.refusal import Refusal
from metaharness.pure.witness import WITNESS_BLIND

SEAM_ORDER = ("registration", "hook", "control_request", "owned_tool", "none")
DECIDER_ORDER = ("embedder", "frame", "deadline", "adapter", "observe")
HERMETIC_HEADING = "hermetic verdict (the attestation half is metaharness's own claim, not independent evidence)"
NOTHING_ADJUDICATED = (
    "  nothing was adjudicated: a census of zero cannot distinguish enforcement holding from nothing being attempted"
)


class AuditorRow(msgspec.Struct, frozen=True):
    """One verdict row the auditor printed on stdout (docs/hermetic.md#auditor)."""

    row: str
    verdict: Literal["ok", "gap", "unk"]
    detail: str


class AuditorOutcome(msgspec.Struct, frozen=True):
    """How the auditor ended: its argv prefix words, exit code and verdict rows."""

    words: tuple[str, ...]
    exit_code: int
    rows: tuple[AuditorRow, ...]


class AuditBaseline(msgspec.Struct, frozen=True):
    """What was recorded at start (docs/hermetic.md#auditor): the spec's sha256 and the auditor program's
    resolved path and sha256."""

    spec_sha256: str
    auditor_program: str
    auditor_sha256: str


class ReportFacts(msgspec.Struct, frozen=True):
    """Everything the report and the audited exit rest on.

    ``audited``: ``--audit`` or ``--hermetic strict`` (else only section (a) is printed, under
    ``--hermetic on``); ``withheld``: ``session.started.withheld`` (``None`` when null or when there
    was no ``session.started``); ``terminal_record``: a terminal record was read; ``stream_reason``:
    the ``stream.closed`` reason; ``refusal``: a post-session refusal (``auditor-failed``,
    ``no-verdict-rows``, a re-check); ``auditor``: the auditor's outcome, when one ran; ``tampered``: the
    stream holds a ``CHANNEL_REFUSED`` (docs/adapters/common.md#child-trees).
    """

    audited: bool
    rows: tuple[RowVerdict, ...]
    census: Census
    withheld: tuple[Withheld, ...] | None
    process: Process
    terminal_record: bool
    stream_reason: str
    auditor: AuditorOutcome | None = None
    refusal: Refusal | None = None
    tampered: bool = False
    witness_gaps: int = 0
    """The route witness's gating findings written to the stream (docs/decisions.md#the-route-witness)."""
    witness_blind: bool = False
    """The route witness wrote ``ROUTE_UNREAD``: a response it could not read."""


def report_facts(
    payloads: Sequence[Event],
    verdict_facts: VerdictFacts,
    audited: bool,
    auditor: AuditorOutcome | None = None,
    refusal: Refusal | None = None,
    witness_gaps: int = 0,
) -> ReportFacts:
    """The report's facts read from the run's own stream (the payloads it wrote, ``stream.closed``
    last): the rows from its ``session.started`` (docs/hermetic.md#verdicts), the census of ``session.ended``
    else recomputed (docs/events.md#census), ``withheld``, whether a terminal record was read
    (``session.ended``), the closing reason and process, and how many gating findings the route witness
    wrote (docs/decisions.md#the-route-witness)."""
    started = next((payload for payload in payloads if isinstance(payload, SessionStarted)), None)
    closed = next((payload for payload in reversed(payloads) if isinstance(payload, StreamClosed)), None)
    return ReportFacts(
        audited=audited,
        rows=row_verdicts(started, verdict_facts),
        census=stream_census(payloads),
        withheld=started.withheld if started is not None else None,
        process=closed.process if closed is not None else UnknownProcess(),
        terminal_record=any(isinstance(payload, SessionEnded) for payload in payloads),
        stream_reason=closed.reason if closed is not None else "error",
        auditor=auditor,
        refusal=refusal,
        tampered=any(isinstance(p, WarningRaised) and p.code == "CHANNEL_REFUSED" for p in payloads),
        witness_gaps=witness_gaps,
        witness_blind=any(isinstance(p, WarningRaised) and p.code == WITNESS_BLIND for p in payloads),
    )


def census_lines(census: Census) -> tuple[str, ...]:
    """Section (b) and (c): the census line, the non-zero seams and deciders in the report's order,
    then the zero-census line when nothing was allowed, denied or replaced."""
    bypassed = f" bypassed={census.bypassed}" if census.bypassed else ""
    lines = [
        (f"decision census: allowed={census.allowed} denied={census.denied} replaced={census.replaced} "
        f"abstained={census.abstained}{bypassed}")
    ]
    lines += [f"  by seam    {seam}: {count}" for seam, count in _ordered(census.by_seam, SEAM_ORDER)]
    lines += [f"  by decider {decider}: {count}" for decider, count in _ordered(census.by_decider, DECIDER_ORDER)]
    if census.allowed + census.denied + census.replaced == 0:
        lines.append(
            NOTHING_ADJUDICATED
            if census.abstained == 0
            else f"  {census.abstained} call(s) were adjudicated by nobody, and that is the configuration: an "
            "abstention hands the call to the harness's own permission pipeline"
        )
    return tuple(lines)


def _ordered(counts: dict[str, int], order: Sequence[str]) -> list[tuple[str, int]]:
    known = [(key, counts[key]) for key in order if counts.get(key, 0)]
    rest = sorted((key, count) for key, count in counts.items() if key not in order and count)
    return known + rest


def withheld_line(withheld: Sequence[Withheld] | None) -> str:
    """Section (d), in one of its three shapes."""
    if withheld is None:
        return "withheld: not stated by the harness"
    if not withheld:
        return "withheld: none declared"
    return "withheld: " + "; ".join(f"{entry.tool} ({entry.reason})" for entry in withheld)


def auditor_line(outcome: AuditorOutcome) -> str:
    """Section (e): ``auditor ["<word>", …]: exit N, K verdict rows``."""
    words = ", ".join(compact(word).decode("utf-8") for word in outcome.words)
    return f"auditor [{words}]: exit {outcome.exit_code}, {len(outcome.rows)} verdict rows"


def child_exit_text(process: Process) -> str:
    """``child exit:`` the exit code, ``signal <N>`` when signalled, ``unknown`` otherwise."""
    if isinstance(process, Exited):
        return str(process.code)
    if isinstance(process, Signaled):
        return f"signal {process.signal}"
    return "unknown"


def run_control(facts: ReportFacts) -> Verdict:
    """The control verdict: ``gap`` when a denied call was bypassed (the census counts it), the child
    planted a name in the hook channel, or the route witness named a gating gap, else the gating rows' verdict,
    ``unk`` rather than ``ok`` when the witness could not read a response (``ROUTE_UNREAD``)."""
    if facts.census.bypassed or facts.tampered or facts.witness_gaps:
        return "gap"
    verdict = control_verdict(facts.rows)
    return "unk" if verdict == "ok" and facts.witness_blind else verdict


def audited_exit(facts: ReportFacts) -> int:
    """The exit of an audited run (docs/hermetic.md#audited-exit), in order: a post-session refusal → 2; a gating
    gap or auditor exit 1 → 1; no terminal record, a stream not closed ``completed``, a gating unk
    or auditor exit 3 → 3; else 0. Advisory rows never change it."""
    if facts.refusal is not None:
        return 2
    control = run_control(facts)
    auditor_exit = facts.auditor.exit_code if facts.auditor is not None else None
    if control == "gap" or auditor_exit == 1:
        return 1
    if not facts.terminal_record or facts.stream_reason != "completed" or control == "unk" or auditor_exit == 3:
        return 3
    return 0


_AUDIT_VERDICTS = {0: "ok (exit 0)", 1: "gap (exit 1)", 2: "refused (exit 2)", 3: "no verdict (exit 3)"}


def audit_report(facts: ReportFacts) -> str:
    """The report of docs/hermetic.md#audit-report: (a) the hermetic verdict; when audited also (b) the census,
    (c) the zero-census line, (d) the withheld line, (e) the auditor line, a post-session refusal
    line, and (f) the three closing lines. Every line ends ``\\n``."""
    lines = [HERMETIC_HEADING, *(row.line() for row in facts.rows)]
    if facts.audited:
        lines += census_lines(facts.census)
        lines.append(withheld_line(facts.withheld))
        if facts.auditor is not None:
            lines.append(auditor_line(facts.auditor))
        if facts.refusal is not None:
            lines.append(facts.refusal.line())
        lines += [
            f"child exit: {child_exit_text(facts.process)}",
            f"control verdict: {run_control(facts)}",
            f"audit verdict: {_AUDIT_VERDICTS[audited_exit(facts)]}",
        ]
    return "".join(line + "\n" for line in lines)


def auditor_rows(stdout: bytes) -> tuple[AuditorRow, ...]:
    """The verdict rows among the auditor's stdout lines: a JSON object with ``row``, ``verdict``
    (``ok`` | ``gap`` | ``unk``) and ``detail``; other lines are ignored (docs/hermetic.md#auditor)."""
    rows: list[AuditorRow] = []
    for line in stdout.splitlines():
        try:
            rows.append(msgspec.json.decode(line, type=AuditorRow))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    return tuple(rows)


def auditor_outcome(words: tuple[str, ...], exit_code: int, stdout: bytes) -> Result[AuditorOutcome, Refusal]:
    """Exit 0 → ok, 1 → gap, 3 → no verdict; any other exit → ``auditor-failed``; 0, 1 or 3 with no
    verdict row → ``no-verdict-rows`` (docs/hermetic.md#auditor)."""
    rows = auditor_rows(stdout)
    if exit_code not in (0, 1, 3):
        return Failure(
            Refusal("auditor-failed", f"the auditor {words[0]} exited {exit_code}; only 0, 1 and 3 are verdicts")
        )
    if not rows:
        return Failure(
            Refusal("no-verdict-rows", f"the auditor {words[0]} exited {exit_code} and printed no verdict row")
        )
    return Success(AuditorOutcome(words=words, exit_code=exit_code, rows=rows))


def recheck_audit(
    options: RunOptions,
    facts: AuditFacts,
    baseline: AuditBaseline,
    spec_sha256: str | None,
    auditor_sha256: str | None,
) -> Result[AuditPairing, Refusal]:
    """The post-session re-check (docs/hermetic.md#auditor): checks 1–5 again over fresh facts, then a spec with
    another sha256 → ``spec-unreadable`` and an auditor program moved or changed →
    ``auditor-not-invokable``. ``spec_sha256``/``auditor_sha256`` are the files' digests now
    (``None`` when unreadable)."""
    return check_audit_pairing(options, facts).bind(
        lambda checked: _unchanged_since_baseline(options, checked, baseline, spec_sha256, auditor_sha256)
    )


def _unchanged_since_baseline(
    options: RunOptions,
    checked: AuditPairing,
    baseline: AuditBaseline,
    spec_sha256: str | None,
    auditor_sha256: str | None,
) -> Result[AuditPairing, Refusal]:
    """The spec and the auditor program are the ones the baseline recorded."""
    if spec_sha256 != baseline.spec_sha256:
        return Failure(
            Refusal(
                "spec-unreadable",
                f"--spec {options.spec} changed during the session: sha256 {spec_sha256} is not {baseline.spec_sha256}",
            )
        )
    if checked.auditor_program != baseline.auditor_program:
        return Failure(
            Refusal(
                "auditor-not-invokable",
                f"the auditor program moved during the session: {checked.auditor_program} is not "
                f"{baseline.auditor_program}",
            )
        )
    if auditor_sha256 != baseline.auditor_sha256:
        return Failure(
            Refusal(
                "auditor-not-invokable",
                f"the auditor program {baseline.auditor_program} changed during the session",
            )
        )
    return Success(checked)
