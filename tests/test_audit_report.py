"""The audit report, the audited exit and the auditor after the session (docs/hermetic.md#auditor,
#audit-report, #audited-exit)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import msgspec
import pytest
from returns.result import Failure

from metaharness.pure.audit_report import (
    AuditorOutcome,
    AuditorRow,
    ReportFacts,
    audit_report,
    audited_exit,
    auditor_outcome,
    auditor_rows,
    census_lines,
    report_facts,
    run_control,
    withheld_line,
)
from metaharness.pure.census import ZERO_CENSUS
from metaharness.pure.events import (
    Allow,
    Census,
    Deny,
    Exited,
    Hermetic,
    SessionEnded,
    SessionStarted,
    Signaled,
    StreamClosed,
    ToolDecided,
    Transcript,
    UnknownProcess,
    WarningRaised,
    Withheld,
)
from metaharness.pure.hermetic import ROWS, RowVerdict, VerdictFacts
from metaharness.pure.options import RunOptions, check_audit_pairing
from metaharness.pure.refusal import Refusal
from metaharness.shell.auditor import gather_audit_facts
from metaharness.shell.auditor_invocation import audit_baseline, run_auditor


def rows(**verdicts: str) -> tuple[RowVerdict, ...]:
    return tuple(
        RowVerdict(row, verdicts.get(row, "ok"), severity, assertion, control, "d")  # type: ignore[arg-type]
        for row, control, assertion, severity in ROWS
    )


def facts(**changes: object) -> ReportFacts:
    base = ReportFacts(
        audited=True,
        rows=rows(),
        census=ZERO_CENSUS,
        withheld=(),
        process=Exited(code=0),
        terminal_record=True,
        stream_reason="completed",
    )
    return msgspec.structs.replace(base, **changes)


def test_a_silent_record_ends_with_the_three_closing_lines_of_an_unk() -> None:
    report = audit_report(facts(rows=rows(H1a="unk", H5="unk"), withheld=None))
    assert report.endswith("child exit: 0\ncontrol verdict: unk\naudit verdict: no verdict (exit 3)\n")
    assert audited_exit(facts(rows=rows(H1a="unk"))) == 3
    lines = report.splitlines()
    assert lines[0] == (
        "hermetic verdict (the attestation half is metaharness's own claim, not independent evidence)"
    )
    assert lines[1] == (
        "  H1a  unk gating   record config home is scratch — plugins are exactly the declared set — d"
    )
    assert lines[16:19] == [
        "decision census: allowed=0 denied=0 replaced=0 abstained=0",
        ("  nothing was adjudicated: a census of zero cannot distinguish enforcement holding from nothing being "
        "attempted"),
        "withheld: not stated by the harness",
    ]


def test_hermetic_on_prints_only_the_verdict_section() -> None:
    report = audit_report(facts(audited=False))
    assert len(report.splitlines()) == 16 and "child exit" not in report and "census" not in report


def test_census_lines_in_the_spec_order_with_non_zero_counts_only() -> None:
    census = Census(
        allowed=2, denied=1, replaced=0, abstained=0,
        by_seam={"control_request": 1, "hook": 2, "none": 0},
        by_decider={"frame": 1, "deadline": 1, "embedder": 1},
    )
    assert census_lines(census) == (
        "decision census: allowed=2 denied=1 replaced=0 abstained=0",
        "  by seam    hook: 2",
        "  by seam    control_request: 1",
        "  by decider embedder: 1",
        "  by decider frame: 1",
        "  by decider deadline: 1",
    )
    abstained = Census(allowed=0, denied=0, replaced=0, abstained=3, by_seam={"none": 3}, by_decider={"observe": 3})
    assert census_lines(abstained)[-1] == (
        "  3 call(s) were adjudicated by nobody, and that is the configuration: an abstention hands the call to "
        "the harness's own permission pipeline"
    )


def test_withheld_in_its_three_shapes() -> None:
    assert withheld_line(None) == "withheld: not stated by the harness"
    assert withheld_line(()) == "withheld: none declared"
    entries = (Withheld(tool="process.run", reason="no --allow-program"), Withheld(tool="web", reason=""))
    assert withheld_line(entries) == "withheld: process.run (no --allow-program); web ()"


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({}, 0),
        ({"rows": rows(H7="gap", H9="unk")}, 1),
        ({"rows": rows(H2="gap")}, 0),
        ({"rows": rows(H11="unk")}, 3),
        ({"terminal_record": False}, 3),
        ({"stream_reason": "killed"}, 3),
        ({"auditor": AuditorOutcome(("a",), 1, ())}, 1),
        ({"auditor": AuditorOutcome(("a",), 3, ()), "rows": rows(H7="gap")}, 1),
        ({"auditor": AuditorOutcome(("a",), 3, ())}, 3),
        ({"refusal": Refusal("no-verdict-rows", "x"), "rows": rows(H7="gap")}, 2),
        ({"witness_blind": True}, 3),
        ({"witness_blind": True, "witness_gaps": 1}, 1),
    ],
)
def test_audited_exit_in_order(changes: dict[str, object], code: int) -> None:
    assert audited_exit(facts(**changes)) == code


def test_auditor_line_refusal_line_and_child_exit_shapes() -> None:
    outcome = AuditorOutcome(("python3", "-m", "aud"), 1, (AuditorRow("R1", "gap", "x"),))
    report = audit_report(facts(auditor=outcome, process=Signaled(signal=15)))
    assert 'auditor ["python3", "-m", "aud"]: exit 1, 1 verdict rows\n' in report
    assert report.endswith("child exit: signal 15\ncontrol verdict: ok\naudit verdict: gap (exit 1)\n")
    refused = audit_report(facts(refusal=Refusal("spec-unreadable", "--spec s changed"), process=UnknownProcess()))
    assert refused.endswith(
        "metaharness: spec-unreadable: --spec s changed\nchild exit: unknown\ncontrol verdict: ok\n"
        "audit verdict: refused (exit 2)\n"
    )


def test_auditor_outcome_reads_rows_and_refuses_by_name() -> None:
    stdout = b'noise\n{"row":"A","verdict":"ok","detail":"fine"}\n{"row":"B","verdict":"maybe","detail":""}\n[1]\n'
    assert auditor_rows(stdout) == (AuditorRow("A", "ok", "fine"),)
    assert auditor_outcome(("a",), 0, stdout).unwrap().rows == (AuditorRow("A", "ok", "fine"),)
    failed = auditor_outcome(("a",), 2, stdout)
    assert isinstance(failed, Failure) and failed.failure().code == "auditor-failed"
    silent = auditor_outcome(("a",), 3, b"nothing\n")
    assert isinstance(silent, Failure) and silent.failure().code == "no-verdict-rows"


AUDITOR = """#!{python}
import json, sys
args = sys.argv[1:]
print("checking", flush=True)
print(json.dumps({{"row": "A1", "verdict": "gap", "detail": " ".join(args)}}))
sys.stderr.write("auditor stderr\\n")
sys.exit(1)
"""


def setup(tmp_path: Path) -> tuple[RunOptions, str, Path, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "aud"
    program.write_text(AUDITOR.format(python=sys.executable))
    program.chmod(0o755)
    spec = tmp_path / "spec.md"
    spec.write_text("the spec\n")
    options = RunOptions(kind="b10x", audit=True, spec=str(spec), auditor="aud check", auditor_args=("--strict",))
    return options, str(bin_dir), program, spec


def baseline_for(options: RunOptions, path: str):  # type: ignore[no-untyped-def]
    pairing = check_audit_pairing(options, gather_audit_facts(options, path)).unwrap()
    return audit_baseline(options, pairing)


def test_run_auditor_invokes_the_prefix_with_spec_transcript_and_args(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    options, path, _program, spec = setup(tmp_path)
    baseline = baseline_for(options, path)
    outcome = run_auditor(options, baseline, path, "/tmp/mh/loop.jsonl").unwrap()
    assert outcome.words == ("aud", "check") and outcome.exit_code == 1
    assert outcome.rows == (AuditorRow("A1", "gap", f"check --spec {spec} --transcript /tmp/mh/loop.jsonl --strict"),)
    assert "auditor stderr" in capfd.readouterr().err


def test_a_spec_changed_during_the_session_is_refused(tmp_path: Path) -> None:
    options, path, _, spec = setup(tmp_path)
    baseline = baseline_for(options, path)
    spec.write_text("another spec\n")
    result = run_auditor(options, baseline, path, "t")
    assert isinstance(result, Failure) and result.failure().code == "spec-unreadable"
    spec.unlink()
    result = run_auditor(options, baseline, path, "t")
    assert isinstance(result, Failure) and result.failure().code == "spec-unreadable"


def test_an_auditor_changed_or_removed_during_the_session_is_refused(tmp_path: Path) -> None:
    options, path, program, _ = setup(tmp_path)
    baseline = baseline_for(options, path)
    program.write_text(program.read_text() + "# changed\n")
    result = run_auditor(options, baseline, path, "t")
    assert isinstance(result, Failure) and result.failure().code == "auditor-not-invokable"
    os.unlink(program)
    result = run_auditor(options, baseline, path, "t")
    assert isinstance(result, Failure) and result.failure().code == "auditor-not-invokable"


def test_an_auditor_shadowed_earlier_on_the_path_is_a_move(tmp_path: Path) -> None:
    options, path, program, _ = setup(tmp_path)
    baseline = baseline_for(options, path)
    earlier = tmp_path / "early"
    earlier.mkdir()
    (earlier / "aud").write_bytes(program.read_bytes())
    (earlier / "aud").chmod(0o755)
    result = run_auditor(options, baseline, f"{earlier}:{path}", "t")
    assert isinstance(result, Failure) and "moved" in result.failure().message


def test_report_facts_are_read_from_the_runs_own_stream() -> None:
    hermetic = Hermetic(mode="strict", decisions="frame", imposed=(), declared=(), unavailable=(), ambient_inputs=(),
                        installed_plugins=())
    nulls = dict.fromkeys(
        ("harness_version", "session_id", "model", "permission_mode", "credential_source", "output_style", "cwd",
         "offered_tools", "slash_commands", "skills", "agents", "plugins", "mcp_servers", "inputs_digest"),
    )
    started = SessionStarted(adapter="b10x", adapter_class="direct_provider", withheld=(Withheld(tool="t", reason="r"),),
                             transcript=Transcript(path=None, digest=None, bytes=None), hermetic=hermetic, **nulls)
    decided = [
        ToolDecided(call_id="1", decision=Allow(), decided_by="frame", seam="control_request", latency_ms=None),
        ToolDecided(call_id="2", decision=Deny(reason="no"), decided_by="frame", seam="control_request",
                    latency_ms=None),
    ]
    closed = StreamClosed(events=4, reason="error", run_id="b10x-1", process=Exited(code=7))
    facts = report_facts([started, *decided, closed], VerdictFacts(kind="b10x"), audited=True)
    assert facts.withheld == (Withheld(tool="t", reason="r"),) and facts.process == Exited(code=7)
    assert (facts.census.allowed, facts.census.denied) == (1, 1) and not facts.terminal_record
    report = audit_report(facts)
    assert "  by seam    control_request: 2\n  by decider frame: 2\nwithheld: t (r)\n" in report
    assert report.endswith("child exit: 7\ncontrol verdict: unk\naudit verdict: no verdict (exit 3)\n")
    ended_fields = dict.fromkeys(
        ("final_answer", "observed_models", "is_error", "subtype", "stop_reason", "terminal_reason",
         "api_error_status", "num_turns", "duration_ms", "duration_api_ms", "ttft_ms", "time_to_request_ms",
         "total_cost_usd", "permission_denials", "subagents_spawned", "usage", "model_usage"),
    )
    ended = SessionEnded(census=ZERO_CENSUS, **ended_fields)
    facts = report_facts([ended], VerdictFacts(kind="b10x"), audited=True)
    assert facts.terminal_record and facts.census == ZERO_CENSUS and facts.withheld is None
    assert facts.process == UnknownProcess() and facts.stream_reason == "error"
    late = WarningRaised(code="DECISION_BYPASSED", message="metaharness denied call 2, yet its result is not an error")
    facts = report_facts([ended, late], VerdictFacts(kind="b10x"), audited=True)
    assert facts.census.bypassed == 1 and run_control(facts) == "gap"  # a bypass shown after the terminal record
    unread = WarningRaised(code="ROUTE_UNREAD", message="the route witness could not read 1 of the 1 model responses")
    facts = report_facts([unread, ended], VerdictFacts(kind="b10x"), audited=True)
    assert facts.witness_blind and run_control(facts) == "unk"  # nobody checked the calls in that response
