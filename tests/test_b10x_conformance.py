"""``conformance b10x``: the eleven vectors, their data read against docs/adapters/b10x.md#conformance-vectors, and
the CLI output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec

from metaharness.pure.b10x.vectors import VECTORS, Verdict, check_c1, check_c2, check_c4, contract_line

METAHARNESS = Path(sys.executable).parent / "metaharness"
DATA = Path(__file__).resolve().parent.parent / "vectors" / "b10x"


def events(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_bytes().splitlines()]


def test_contract_reports_eleven_checked_none_failed() -> None:
    done = subprocess.run([str(METAHARNESS), "conformance", "b10x", "--contract"], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        b'{"breaking_changes":0,"checked":11,"consumer":"metaharness.event/1","failed":0,"kind":"contract_result",'
        b'"provider":"b10x 0.22.0"}\n'
    )
    assert done.stderr == b"metaharness: warn C4 c4-version-banner \xe2\x80\x94 b10x-harness 0.1.0 is outside the pin (0.22.0)\n"


def test_human_output_lists_every_vector() -> None:
    done = subprocess.run([str(METAHARNESS), "conformance", "b10x"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[:10] == [f"pass {v.tier} {v.id}" for v in VECTORS[:10]]
    assert lines[10] == "warn C4 c4-version-banner — b10x-harness 0.1.0 is outside the pin (0.22.0)"
    assert lines[11] == "11 vectors, 0 failed — no model, no network, no credential"


def test_launch_fixtures_match_the_spec_table() -> None:
    first = json.loads((DATA / "c1/launch.json").read_text())
    assert first["args"] == (
        ["run", "--execution-path", "metaharness", "--json", "--approve-up-to", "high", "--no-session", "--workspace", "/scratch/run/work", "--base-url", "https://example.invalid/v1", "--model", "b10x-emulated", "--input"] + ["observe this run"]
    )
    assert first["env"] == {"PATH": "/operator/.local/bin:/usr/local/bin:/usr/bin:/bin", "XDG_CONFIG_HOME": "/scratch/run/config"}
    assert (first["cwd"], first["files"]) == ("/scratch/run/work", [])
    context = json.loads((DATA / "c1/launch-context.json").read_text())
    assert context["args"][-6:-2] == [
        "--context", "/scratch/run/context/1/docs/brief.md", "--context", "/scratch/run/context/2/notes/plan.md"
    ]
    assert [f["sha256"] for f in context["files"]] == [
        "74608a6e8df25f2add98a17f8dbb04af6f4f81a7d12de2cb9d68aed2a29d1793",
        "5cbcd5460516ddf3d9d11d6bfc3625b921d16a3c5d2eac25c73695df40fd1063",
    ]
    seam = json.loads((DATA / "c1/launch-caller-seam.json").read_text())
    assert seam["args"][3:9] == ["--json", "--approve-up-to", "low", "--approve", "caller", "--no-session"]
    model = seam["args"].index("--model")
    assert seam["args"][model + 2 : model + 4] == ["--wire", "anthropic-messages"]


def test_record_vectors_assert_what_the_spec_table_says() -> None:
    unpublished = events("enforcement/unpublished.expected.jsonl")
    assert any(e.get("code") == "unpublished-tool" for e in unpublished)
    assert any(e["event"] == "tool.result" and e["is_error"] for e in unpublished)
    assert unpublished[-1]["reason"] == "completed"
    denied = events("enforcement/approval-denied.expected.jsonl")
    names = [e.get("code") or e["event"] for e in denied]
    assert names.index("approval-denied") < names.index("tool.result") and "tool.decided" not in names
    budget = next(e for e in events("enforcement/budget-stop.expected.jsonl") if e["event"] == "session.ended")
    assert (budget["subtype"], budget["is_error"], budget["num_turns"]) == ("max-turns", True, 1)
    assert events("enforcement/budget-stop.expected.jsonl")[-1]["reason"] == "budget"
    cancelled = events("enforcement/cancelled.expected.jsonl")
    assert next(e for e in cancelled if e["event"] == "session.ended")["num_turns"] == 1
    assert cancelled[-1]["reason"] == "error"
    allow = events("caller/allow.expected.jsonl")
    assert next(e for e in allow if e["event"] == "tool.requested")["seam"] == "control_request"
    decided = next(e for e in allow if e["event"] == "tool.decided")
    assert (decided["decision"], decided["decided_by"]) == ({"decision": "allow"}, "frame")
    assert not any(e.get("code") == "approval-disagreed" for e in allow)
    assert (DATA / "caller/allow.stdin").read_bytes() == b'{"call_id":"call_b10x_001","decision":"allow"}\n'
    deny = events("caller/deny.expected.jsonl")
    reason = next(e for e in deny if e["event"] == "tool.decided")["decision"]["reason"]
    assert reason.startswith('this step admits ["dir.list", "file.read", "search"] and file_write is file.write')
    assert (DATA / "caller/deny.stdin").read_bytes() == msgspec.json.encode(
        {"call_id": "call_b10x_001", "decision": "deny", "reason": reason}
    ) + b"\n"
    assert next(e for e in deny if e["event"] == "tool.result")["is_error"] is True


def test_a_changed_fixture_or_record_fails() -> None:
    vector = VECTORS[0]
    broken = (DATA / "c1/launch.json").read_bytes().replace(b"high", b"low")
    verdict = check_c1(vector, broken, None)
    assert verdict.outcome == "FAIL" and verdict.detail.startswith("args differs: expected ")
    golden = VECTORS[3]
    expected = (DATA / golden.expected).read_bytes()
    record = (DATA / golden.record).read_bytes().replace(b"hello harness", b"hello world")
    failed = check_c2(golden, record, expected, b"b10x-harness 0.1.0\n")
    assert failed.outcome == "FAIL" and failed.detail.startswith("line 8 differs: expected ")


def test_banner_verdicts() -> None:
    banner = VECTORS[10]
    assert check_c4(banner, b"b10x-harness 0.22.0\n").outcome == "pass"
    assert check_c4(banner, b"b10x-harness 0.1.0\n").line() == "warn C4 c4-version-banner — b10x-harness 0.1.0 is outside the pin (0.22.0)"
    assert check_c4(banner, b"something else\n").outcome == "FAIL"


def test_contract_counts_breaking_changes_of_record_tiers() -> None:
    verdicts = (Verdict(VECTORS[0], "FAIL", "x"), Verdict(VECTORS[4], "FAIL", "y"), Verdict(VECTORS[10], "warn", "z"))
    assert json.loads(contract_line(verdicts)) == {
        "breaking_changes": 1, "checked": 3, "consumer": "metaharness.event/1", "failed": 2,
        "kind": "contract_result", "provider": "b10x 0.22.0",
    }
