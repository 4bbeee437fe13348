"""``conformance codex``: the nine vectors of docs/adapters/codex.md#conformance-vectors pass, and each check fails on
a changed input."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial

from metaharness.pure.codex.vectors import LAUNCH_VECTORS, VECTORS
from metaharness.pure.conformance import (
    Outcome,
    check_banner,
    check_exchange,
    check_launch,
    check_replay,
    contract_line,
)
from metaharness.shell.codex.conformance import run_exchange
from metaharness.shell.vendor_vectors import vector_file, vendor_outcomes

vector_bytes = partial(vector_file, "codex")


def test_all_nine_vectors_pass_in_spec_order():
    outcomes = vendor_outcomes(VECTORS, run_exchange)
    assert [(o.tier, o.id) for o in outcomes] == [
        ("C1", "c1-launch"),
        ("C1", "c1-launch-context"),
        ("C1", "c1-launch-loopback"),
        ("C1", "c1-launch-cwd"),
        ("C2", "c2-rollout-shell"),
        ("C2", "c2-rollout-patch"),
        ("C3", "c3-hook-deny"),
        ("C3", "c3-hook-allow"),
        ("C4", "c4-version-banner"),
    ]
    assert [o.line() for o in outcomes if o.status != "pass"] == []


def test_launch_fixtures_state_what_page_50_asks():
    loopback = json.loads(vector_bytes("c1/launch-loopback.json"))
    assert loopback["env"]["METAHARNESS_LOOPBACK_KEY"] == "mh-run-golden-000000000000000000000000"
    assert [f["path"] for f in loopback["files"]] == [
        "/scratch/run/codex-home/config.toml",
        "/scratch/run/hooks/pretooluse",
    ]
    context = json.loads(vector_bytes("c1/launch-context.json"))
    assert context["context_files"] == [
        {
            "path": "docs/brief.md",
            "sha256": "74608a6e8df25f2add98a17f8dbb04af6f4f81a7d12de2cb9d68aed2a29d1793",
            "bytes": 26,
            "channel": "user-turn",
        }
    ]
    assert "workspace=operator-named" in json.loads(vector_bytes("c1/launch-cwd.json"))["args"][-1]


def test_a_changed_fixture_fails_naming_the_key():
    vector, fixture, spec = LAUNCH_VECTORS[0]
    changed = json.loads(vector_bytes(fixture))
    changed["args"][1] = "--jsonl"
    outcome = check_launch(VECTORS, vector, spec, json.dumps(changed).encode())
    assert outcome.status == "FAIL" and outcome.detail == "args differ from the fixture"


def test_a_changed_expected_stream_fails_at_its_first_line():
    record = vector_bytes("record/shell.jsonl")
    expected = vector_bytes("record/shell.expected.jsonl").replace(b'"seq":3,', b'"seq":33,', 1)
    outcome = check_replay(VECTORS, "c2-rollout-shell", "record/shell", record, expected)
    assert outcome.status == "FAIL" and outcome.detail.startswith("line 3 differs")


def test_the_exchange_fails_when_the_answer_differs():
    answer, stream = run_exchange("hook/frame-deny.json")
    assert answer == vector_bytes("hook/deny.answer")
    outcome = check_exchange("c3-hook-deny", answer, vector_bytes("hook/allow.answer"), stream, stream)
    assert outcome.status == "FAIL" and "the hook answered" in outcome.detail


def test_banner_on_pin_passes_other_version_warns_other_shape_fails():
    assert check_banner(VECTORS, b"codex-cli 0.171.0\n").status == "pass"
    warned = check_banner(VECTORS, b"codex-cli 0.172.0\n")
    assert warned.status == "warn" and warned.line() == (
        "warn C4 c4-version-banner — codex-cli 0.172.0 is outside the pin (0.171.0)"
    )
    assert check_banner(VECTORS, b"2.1.332 (Claude Code)\n").status == "FAIL"


def test_the_verb_prints_nine_lines_and_the_summary_or_only_the_contract_line():
    code = (
        "import sys; from metaharness.shell.conformance import run_conformance; sys.exit(run_conformance('codex', {}))"
    )
    human = subprocess.run([sys.executable, "-c", code.format("False")], capture_output=True, text=True, check=False)
    assert human.returncode == 0
    assert human.stdout.splitlines()[-1] == "9 vectors, 0 failed — no model, no network, no credential"
    assert human.stdout.splitlines()[0] == "pass C1 c1-launch"
    contract = subprocess.run([sys.executable, "-c", code.format("True")], capture_output=True, text=True, check=False)
    assert contract.stdout == (
        '{"breaking_changes":0,"checked":9,"consumer":"metaharness.event/1","failed":0,'
        '"kind":"contract_result","provider":"codex 0.171.0"}\n'
    )


def test_the_contract_counts_record_tier_failures_as_breaking():
    outcomes = (
        Outcome("C1", "c1-launch", "FAIL", "args differ"),
        Outcome("C2", "c2-rollout-shell", "FAIL", "line 1 differs"),
        Outcome("C4", "c4-version-banner", "warn", "other"),
    )
    assert json.loads(contract_line(VECTORS, outcomes)) == {
        "breaking_changes": 1,
        "checked": 3,
        "consumer": "metaharness.event/1",
        "failed": 2,
        "kind": "contract_result",
        "provider": "codex 0.171.0",
    }
