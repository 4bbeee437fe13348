"""End to end: the real ``b10x-harness`` process against the real ``b10x-emulator`` over a loopback socket,
every loop scenario of docs/loop.md#loop-scenarios on both wires, the record asserted line by line, the
workspace checked."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from loop_process import HARNESS, emulator, harness

WIRES = ("openai-responses", "anthropic-messages")
CALL_IDS = {"openai-responses": "call_b10x_001", "anthropic-messages": "toolu_b10x_001"}
USAGE_CALL = {"kind": "usage", "model": "b10x-emulated", "input_tokens": 42, "output_tokens": 8, "cached_input_tokens": 7}
USAGE_TEXT = {**USAGE_CALL, "output_tokens": 4}
COMPLETED = {"kind": "finished", "stop": {"kind": "completed"}, "turns": 2}


def text_turn(turn: int, first: str, second: str) -> list[dict[str, Any]]:
    return [
        {"kind": "turn-started", "turn": turn},
        {"kind": "text-delta", "text": first},
        {"kind": "text-delta", "text": second},
        USAGE_TEXT,
    ]


def call_turn(call_id: str, arguments: str) -> list[dict[str, Any]]:
    return [
        {"kind": "turn-started", "turn": 1},
        {"kind": "tool-arguments-delta", "call_id": call_id, "delta": arguments},
        USAGE_CALL,
    ]


@pytest.mark.parametrize("wire", WIRES)
def test_text(wire: str, workspace: Path) -> None:
    run = harness("text", wire, workspace)
    assert run.after_started() == [
        *text_turn(1, "provider emu", "lation passed"),
        {"kind": "finished", "stop": {"kind": "completed"}, "turns": 1},
    ]
    assert run.code == 0
    started = run.lines[0]
    assert started["workspace"] == str(workspace.resolve())
    assert started["credential_source"] == "none"
    assert [request["user_agent"] for request in run.requests] == ["b10x-harness/0.1.0"]
    assert run.requests[0]["header_names"][-2:] == ["user-agent", "content-length"]
    assert "accept-encoding" not in run.requests[0]["header_names"]


@pytest.mark.parametrize("wire", WIRES)
def test_flat_tool(wire: str, workspace: Path) -> None:
    call_id = CALL_IDS[wire]
    run = harness("flat-tool", wire, workspace)
    assert run.after_started() == [
        *call_turn(call_id, '{"path":"README.md"}'),
        {
            "kind": "tool-requested",
            "call_id": call_id,
            "name": "file_read",
            "arguments": {"path": "README.md"},
            "operation": "file.read",
            "subjects": ["file:README.md"],
        },
        {"kind": "tool-completed", "call_id": call_id, "failed": False},
        *text_turn(2, "The file says:", " hello harness"),
        COMPLETED,
    ]
    assert run.code == 0
    assert run.requests[1]["tool_results"] == 1


def write_requested(call_id: str) -> dict[str, Any]:
    return {
        "kind": "tool-requested",
        "call_id": call_id,
        "name": "file_write",
        "arguments": {"path": "note.md", "text": "written by the harness\n"},
        "operation": "file.write",
        "subjects": ["file:note.md"],
    }


@pytest.mark.parametrize("wire", WIRES)
def test_flat_write_approved_by_all_writes(wire: str, workspace: Path) -> None:
    call_id = CALL_IDS[wire]
    run = harness("flat-write", wire, workspace, "--approve", "all")
    assert run.after_started()[3:] == [
        write_requested(call_id),
        {"kind": "approval-required", "call_id": call_id, "name": "file_write"},
        {"kind": "approval-resolved", "call_id": call_id, "approved": True},
        {"kind": "tool-completed", "call_id": call_id, "failed": False},
        *text_turn(2, "that is what ", "the tool said"),
        COMPLETED,
    ]
    assert (workspace / "note.md").read_text() == "written by the harness\n"
    assert run.code == 0


@pytest.mark.parametrize("wire", WIRES)
def test_flat_write_denied_by_the_caller_keeps_the_tree_clean(wire: str, workspace: Path) -> None:
    call_id = CALL_IDS[wire]
    answer = json.dumps({"call_id": call_id, "decision": "deny", "reason": "frame denies file.write on file:note.md"})
    run = harness("flat-write", wire, workspace, "--approve", "caller", stdin=answer.encode() + b"\n")
    assert run.after_started()[3:] == [
        write_requested(call_id),
        {"kind": "approval-required", "call_id": call_id, "name": "file_write"},
        {"kind": "approval-resolved", "call_id": call_id, "approved": False},
        {"kind": "tool-completed", "call_id": call_id, "failed": True},
        *text_turn(2, "that is what ", "the tool said"),
        COMPLETED,
    ]
    assert sorted(p.name for p in workspace.iterdir()) == ["README.md"]
    assert run.code == 0


@pytest.mark.parametrize("wire", WIRES)
def test_flat_write_allowed_by_the_caller_writes(wire: str, workspace: Path) -> None:
    call_id = CALL_IDS[wire]
    answer = json.dumps({"decision": "allow", "call_id": call_id})
    run = harness("flat-write", wire, workspace, "--approve", "caller", stdin=answer.encode() + b"\r\n")
    assert {"kind": "approval-resolved", "call_id": call_id, "approved": True} in run.lines
    assert (workspace / "note.md").read_text() == "written by the harness\n"
    assert run.code == 0


@pytest.mark.parametrize(("stdin", "why"), [(b"", "stdin is closed"), (b"yes please\n", "the line is not JSON")])
def test_caller_eof_or_garbage_denies_and_says_why(stdin: bytes, why: str, workspace: Path) -> None:
    run = harness("flat-write", "openai-responses", workspace, "--approve", "caller", stdin=stdin)
    assert run.after_started()[4:7] == [
        {"kind": "approval-required", "call_id": "call_b10x_001", "name": "file_write"},
        {
            "kind": "warning",
            "code": "approval-answer-unreadable",
            "message": f"the answer for call_b10x_001 could not be read: {why}",
        },
        {"kind": "approval-resolved", "call_id": "call_b10x_001", "approved": False},
    ]
    assert not (workspace / "note.md").exists()
    assert run.lines[-1] == COMPLETED


@pytest.mark.parametrize("wire", WIRES)
def test_flat_write_under_deny_is_refused(wire: str, workspace: Path) -> None:
    run = harness("flat-write", wire, workspace, "--approve", "deny")
    assert {"kind": "approval-resolved", "call_id": CALL_IDS[wire], "approved": False} in run.lines
    assert not (workspace / "note.md").exists()
    assert run.lines[-1] == COMPLETED


@pytest.mark.parametrize("wire", WIRES)
def test_flat_edit_approved_edits(wire: str, workspace: Path) -> None:
    call_id = CALL_IDS[wire]
    run = harness("flat-edit", wire, workspace, "--yes")
    assert run.after_started()[3:7] == [
        {
            "kind": "tool-requested",
            "call_id": call_id,
            "name": "file_edit",
            "arguments": {"path": "README.md", "old": "hello", "new": "goodbye"},
            "operation": "file.edit",
            "subjects": ["file:README.md"],
        },
        {"kind": "approval-required", "call_id": call_id, "name": "file_edit"},
        {"kind": "approval-resolved", "call_id": call_id, "approved": True},
        {"kind": "tool-completed", "call_id": call_id, "failed": False},
    ]
    assert (workspace / "README.md").read_text() == "goodbye harness\n"
    assert run.lines[-1] == COMPLETED


@pytest.mark.parametrize("wire", WIRES)
def test_flat_run_runs_the_offered_program(wire: str, workspace: Path) -> None:
    call_id = CALL_IDS[wire]
    run = harness("flat-run", wire, workspace, "--allow-program", "true", "--approve-up-to", "high")
    assert run.lines[0]["published_tools"][-1] == "run"
    assert run.lines[0]["withheld"] == []
    assert run.after_started()[3:5] == [
        {
            "kind": "tool-requested",
            "call_id": call_id,
            "name": "run",
            "arguments": {"argv": ["true"]},
            "operation": "shell",
            "subjects": ["proc:true"],
        },
        {"kind": "tool-completed", "call_id": call_id, "failed": False},
    ]
    assert run.lines[-1] == COMPLETED


@pytest.mark.parametrize("wire", WIRES)
def test_unpublished_tool(wire: str, workspace: Path) -> None:
    call_id = CALL_IDS[wire]
    run = harness("unpublished-tool", wire, workspace)
    assert run.after_started()[3:6] == [
        {"kind": "tool-requested", "call_id": call_id, "name": "shell.exec", "arguments": {"cmd": "id"}},
        {"kind": "warning", "code": "unpublished-tool", "message": "`shell.exec` is not one of this run's tools"},
        {"kind": "tool-completed", "call_id": call_id, "failed": True},
    ]
    assert run.lines[-1] == COMPLETED


@pytest.mark.parametrize("wire", WIRES)
def test_reasoning_is_replayed(wire: str, workspace: Path) -> None:
    run = harness("reasoning", wire, workspace)
    assert run.after_started()[:2] == [
        {"kind": "turn-started", "turn": 1},
        {"kind": "reasoning-delta", "text": "Reading the file first."},
    ]
    assert run.lines[-1] == COMPLETED
    assert run.requests[1]["replayed_reasoning"] == 1


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("scenario", ["bad-arguments", "unauthorized", "malformed", "failed"])
def test_final_errors_exit_one_without_finished(scenario: str, wire: str, workspace: Path) -> None:
    run = harness(scenario, wire, workspace)
    assert run.code == 1
    assert "finished" not in run.kinds() and "refused" not in run.kinds()
    assert run.stderr.splitlines()[-1].startswith("error: ")


@pytest.mark.parametrize("wire", WIRES)
def test_cold_retries_three_times_then_fails(wire: str, workspace: Path) -> None:
    run = harness("cold", wire, workspace)
    warnings = [line for line in run.lines if line["kind"] == "warning"]
    assert [w["code"] for w in warnings] == ["turn-retried"] * 3
    assert [w["message"].split(":")[0] for w in warnings] == [
        f"attempt {n} of 4 failed before answering and is being retried after 5000 ms" for n in (1, 2, 3)
    ]
    assert run.code == 1
    assert run.stderr.rstrip().endswith("(after 4 attempts, none of which produced a whole turn)")
    assert len(run.requests) == 4


@pytest.mark.parametrize("wire", WIRES)
def test_cold_once_retries_once_and_completes(wire: str, workspace: Path) -> None:
    run = harness("cold-once", wire, workspace)
    assert [line["code"] for line in run.lines if line["kind"] == "warning"] == ["turn-retried"]
    assert run.lines[-1] == {"kind": "finished", "stop": {"kind": "completed"}, "turns": 1}


def test_the_retry_wait_is_slept_in_real_time(workspace: Path) -> None:
    """The one retry test on the real clock: without the testing knob the one-second backoff is waited out."""
    with emulator("cold-once", workspace.parent / "cold-once.record.jsonl") as base_url:
        argv = [HARNESS, "run", "--json", "--no-session", "--workspace", str(workspace), "--base-url", base_url]
        argv += ["--model", "b10x-emulated", "--wire", "anthropic-messages", "--input", "go"]
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
        waited = time.monotonic() - started
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    (warning,) = [line["message"] for line in lines if line["kind"] == "warning"]
    assert warning.startswith("attempt 1 of 4 failed before answering and is being retried after 1000 ms: ")
    assert lines[-1] == {"kind": "finished", "stop": {"kind": "completed"}, "turns": 1}
    assert waited >= 1.0


@pytest.mark.parametrize("wire", WIRES)
def test_truncated_is_retried_by_the_loop_three_times(wire: str, workspace: Path) -> None:
    run = harness("truncated", wire, workspace)
    retried = [line for line in run.lines if line["kind"] == "turn-retried"]
    assert [(r["turn"], r["attempt"]) for r in retried] == [(1, 1), (1, 2), (1, 3)]
    assert run.code == 1 and "finished" not in run.kinds()


@pytest.mark.parametrize("wire", WIRES)
def test_fails_after_turn(wire: str, workspace: Path) -> None:
    run = harness("fails-after-turn", wire, workspace)
    assert run.kinds()[-2:] == ["tool-completed", "turn-started"]
    assert run.code == 1


@pytest.mark.parametrize("wire", WIRES)
def test_incomplete(wire: str, workspace: Path) -> None:
    run = harness("incomplete", wire, workspace)
    assert run.lines[-1] == {
        "kind": "finished",
        "stop": {"kind": "provider-incomplete", "reason": "max_output_tokens"},
        "turns": 1,
    }
    assert run.code == 2


@pytest.mark.parametrize("wire", WIRES)
def test_no_usage_writes_no_usage_line(wire: str, workspace: Path) -> None:
    run = harness("no-usage", wire, workspace)
    assert "usage" not in run.kinds()
    assert run.lines[-1]["stop"] == {"kind": "completed"}


@pytest.mark.parametrize("wire", WIRES)
def test_no_usage_under_a_token_budget_fails_closed(wire: str, workspace: Path) -> None:
    run = harness("no-usage", wire, workspace, "--max-output-tokens", "100")
    assert run.lines[-1]["stop"] == {
        "kind": "budget-unobservable",
        "name": "max-output-tokens",
        "reason": "the provider reported no usage",
    }
    assert run.code == 2


@pytest.mark.parametrize("wire", WIRES)
def test_unknown_events_warn(wire: str, workspace: Path) -> None:
    run = harness("unknown-events", wire, workspace)
    assert [line["code"] for line in run.lines if line["kind"] == "warning"] == ["unknown-stream-event"]
    assert run.lines[-1]["stop"] == {"kind": "completed"}


@pytest.mark.parametrize("wire", WIRES)
def test_max_turns_one_stops_after_the_call(wire: str, workspace: Path) -> None:
    run = harness("flat-tool", wire, workspace, "--max-turns", "1")
    assert run.kinds()[-2:] == ["tool-completed", "finished"]
    assert run.lines[-1] == {"kind": "finished", "stop": {"kind": "max-turns", "limit": 1}, "turns": 1}
    assert run.code == 2


@pytest.mark.parametrize("wire", WIRES)
def test_sigint_in_the_first_stream_cancels(wire: str, workspace: Path, tmp_path: Path) -> None:
    """SIGINT once the emulator has recorded the request, so the slow answer's 4 s stream is in flight."""
    record = tmp_path / "slow.jsonl"
    with emulator("slow", record) as base_url:
        argv = [HARNESS, "run", "--json", "--no-session", "--workspace", str(workspace), "--base-url", base_url]
        process = subprocess.Popen(
            [*argv, "--model", "b10x-emulated", "--wire", wire, "--input", "go"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None
        lines = [json.loads(process.stdout.readline()), json.loads(process.stdout.readline())]
        deadline = time.monotonic() + 60
        while not (record.exists() and record.read_bytes().endswith(b"\n")):
            assert time.monotonic() < deadline, "the emulator never recorded the request"
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        lines += [json.loads(line) for line in process.stdout.read().splitlines()]
        code = process.wait(timeout=60)
    assert [line["kind"] for line in lines] == ["started", "turn-started", "finished"]
    assert lines[-1] == {"kind": "finished", "stop": {"kind": "cancelled", "reason": "the caller cancelled"}, "turns": 1}
    assert code == 2
