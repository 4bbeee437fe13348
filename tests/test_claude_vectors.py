"""``conformance claude``: the nine vectors pass on the packaged files, and each tier fails when its
data is tampered with (docs/adapters/claude.md#conformance-vectors, docs/adapters/common.md#conformance)."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial

import msgspec

from metaharness.pure.claude.control import initialize_line, user_message_line
from metaharness.pure.claude.vectors import INTERPRETER, LAUNCH_VECTORS, claude_vectors
from metaharness.pure.conformance import check_banner, check_exchange, check_launch, check_replay, contract_line
from metaharness.shell.claude.conformance import run_exchange
from metaharness.shell.facts import own_cli
from metaharness.shell.vendor_vectors import vector_file, vendor_outcomes

VECTORS = claude_vectors(own_cli(INTERPRETER))
vector_bytes = partial(vector_file, "claude")


def test_every_vector_passes() -> None:
    outcomes = vendor_outcomes(VECTORS, run_exchange)
    assert [(o.tier, o.id, o.status) for o in outcomes] == [
        ("C1", "c1-launch", "pass"),
        ("C1", "c1-launch-context", "pass"),
        ("C1", "c1-launch-loopback", "pass"),
        ("C1", "c1-launch-catalogue", "pass"),
        ("C2", "c2-record-bash", "pass"),
        ("C2", "c2-record-write", "pass"),
        ("C3", "c3-hook-deny", "pass"),
        ("C3", "c3-hook-allow", "pass"),
        ("C4", "c4-version-banner", "pass"),
    ]
    assert json.loads(contract_line(VECTORS, outcomes)) == {
        "breaking_changes": 0, "checked": 9, "consumer": "metaharness.event/1", "failed": 0,
        "kind": "contract_result", "provider": "claude 2.1.332",
    }  # fmt: skip


def test_the_catalogue_fixture_names_the_server_and_the_copy() -> None:
    fixture = json.loads(vector_bytes("c1/launch-catalogue.json"))
    assert fixture["args"][-4:] == ["--tools", "", "--mcp-config", "/scratch/run/mcp-config.json"]
    assert [f["path"] for f in fixture["files"]] == [
        "/scratch/run/catalogue.json", "/scratch/run/claude-settings.json", "/scratch/run/mcp-config.json",
    ]  # fmt: skip


def test_the_launch_fixture_holds_the_endpoint_route_and_no_credential_file() -> None:
    fixture = json.loads(vector_bytes("c1/launch.json"))
    assert fixture["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:41237"
    assert [f["path"] for f in fixture["files"]] == ["/scratch/run/claude-settings.json"]
    loopback = json.loads(vector_bytes("c1/launch-loopback.json"))
    assert loopback["env"]["ANTHROPIC_AUTH_TOKEN"] == "mh-run-golden-000000000000000000000000"
    assert not any("credentials" in f["path"] for f in loopback["files"])


def test_a_tampered_launch_fixture_fails() -> None:
    vector, fixture, spec = LAUNCH_VECTORS[0]
    document = json.loads(vector_bytes(fixture))
    document["args"][4] = "--quiet"
    outcome = check_launch(VECTORS, vector, spec, msgspec.json.encode(document))
    assert (outcome.status, outcome.detail) == ("FAIL", "args differ from the fixture")


def test_a_tampered_replay_fails_naming_the_line() -> None:
    expected = vector_bytes("record/bash.expected.jsonl").replace(b'"echo emulated"', b'"echo other"', 1)
    outcome = check_replay(VECTORS, "c2-record-bash", "record/bash", vector_bytes("record/bash.jsonl"), expected)
    assert outcome.status == "FAIL" and outcome.detail.startswith("line 2 differs")


def test_a_different_answer_fails_the_exchange() -> None:
    expected = vector_bytes("hook/deny.expected.jsonl")
    outcome = check_exchange("c3-hook-deny", b"", vector_bytes("hook/deny.answer"), expected, expected)
    assert outcome.status == "FAIL" and "the hook answered" in outcome.detail


def test_banners() -> None:
    assert check_banner(VECTORS, b"2.1.332 (Claude Code)\n").status == "pass"
    assert check_banner(VECTORS, b"2.1.400 (Claude Code)\n").status == "warn"
    assert check_banner(VECTORS, b"codex-cli 0.171.0\n").status == "FAIL"


def test_the_child_confirms_initialize_writes_the_record_and_asks_in_band_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    record = tmp_path / "record.jsonl"
    record.write_bytes(vector_bytes("hook/record.jsonl"))
    request = tmp_path / "request.json"
    request.write_bytes(b'{"tool_use_id":"x"}')
    answer = b'{"type":"control_response","response":{"subtype":"success","request_id":"conformance-c3","response":{"a":1}}}\n'
    done = subprocess.run(
        [sys.executable, "-m", "metaharness.shell.conformance_child", "claude", str(record), str(request),
         str(tmp_path / "hook"), str(tmp_path / "answer")],
        input=initialize_line() + user_message_line("t") + answer, capture_output=True, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines(keepends=True)
    assert json.loads(lines[0])["response"]["response"] == {"hooks_applied": True, "hook_on_failure_supported": True}
    asked = [json.loads(line) for line in lines if b'"hook_callback"' in line]
    assert len(asked) == 1 and asked[0]["request"]["input"] == {"tool_use_id": "x"}
    assert b"".join(line for line in lines[1:] if b'"hook_callback"' not in line) == record.read_bytes()
    assert (tmp_path / "answer").read_bytes() == b'{"a":1}'


def test_the_verb_prints_each_vector_then_the_summary_and_the_contract_line() -> None:
    human = subprocess.run([sys.executable, "-m", "metaharness.shell", "conformance", "claude"], capture_output=True,
                           text=True, check=False)  # fmt: skip
    lines = human.stdout.splitlines()
    assert lines[0] == "pass C1 c1-launch" and lines[3] == "pass C1 c1-launch-catalogue"
    assert lines[-1] == "9 vectors, 0 failed — no model, no network, no credential"
    assert human.returncode == 0
    contract = subprocess.run([sys.executable, "-m", "metaharness.shell", "conformance", "claude", "--contract"],
                              capture_output=True, text=True, check=False)  # fmt: skip
    assert contract.stdout == (
        '{"breaking_changes":0,"checked":9,"consumer":"metaharness.event/1","failed":0,"kind":"contract_result",'
        '"provider":"claude 2.1.332"}\n'
    )
    assert contract.stderr == ""
