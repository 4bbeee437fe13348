"""End to end controls of the real loop against the real emulator: the metaharness argv shape, budgets,
prices, write scope, deadline, signals and a cancel while the caller is asked (docs/loop.md#command-line, #the-record,
#the-turn-loop, #approvals, docs/adapters/b10x.md#argv)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers.silent_endpoint import silent_endpoint
from loop_process import HARNESS, emulator, harness

from metaharness.pure.budgets import LOOP_READ_S


def test_the_argv_metaharness_builds_runs_the_caller_seam(workspace: Path, tmp_path: Path) -> None:
    context = tmp_path / "scratch" / "context" / "1" / "notes.md"
    context.parent.mkdir(parents=True)
    context.write_text("a <note> & more\n")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"source": "test", "as_of": "2026-11-30", "models": {}}))
    with emulator("flat-write", tmp_path / "record.jsonl") as base_url:
        argv = [
            HARNESS, "run", "--execution-path", "metaharness", "--json", "--approve-up-to", "low", "--approve",
            "caller", "--no-session", "--workspace", str(workspace), "--base-url", base_url, "--model",
            "b10x-emulated", "--wire", "openai-responses", "--api-key-env", "B10X_E2E_KEY", "--write-scope",
            "docs/**=allowed", "--scope-announce", "silent", "--prices", str(prices), "--allow-program", "true",
            "--max-turns", "4", "--context", str(context), "--input", "",
        ]
        answer = b'{"call_id":"call_b10x_001","decision":"allow"}\n'
        done = subprocess.run(
            argv, input=answer, capture_output=True, timeout=60, check=False, env={"B10X_E2E_KEY": "k", "PATH": "/usr/bin:/bin"}
        )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr
    started = lines[0]
    assert started["credential_source"] == "api-key:environment"
    assert started["published_tools"][-1] == "run"
    assert [entry["id"] for entry in started["context"]] == ["harness.instructions", "context.1", "environment.workspace"]
    assert lines[1] == {"kind": "rates", "source": "test", "as_of": "2026-11-30"}
    assert lines[2] == {
        "kind": "warning",
        "code": "unpriced-model",
        "message": "no price is known for `b10x-emulated`; no cost is reported",
    }
    assert (workspace / "note.md").read_text() == "written by the harness\n"
    request = json.loads((tmp_path / "record.jsonl").read_text().splitlines()[0])
    assert "launched by metaharness" in request["instruction_text"]
    assert "Write scope" not in request["instruction_text"]
    assert "a &lt;note> &amp; more" in request["instruction_text"]
    assert request["first_user_text"] == ""


def test_write_scope_refuses_before_asking(workspace: Path) -> None:
    run = harness("flat-write", "anthropic-messages", workspace, "--yes", "--write-scope", "*.md=partial-only")
    call_id = "toolu_b10x_001"
    assert run.after_started()[4:6] == [
        {
            "kind": "warning",
            "code": "scope-refused",
            "message": "`note.md` is outside this run's write scope (`*.md`: partial-only)",
        },
        {"kind": "tool-completed", "call_id": call_id, "failed": True},
    ]
    assert not (workspace / "note.md").exists()


def test_an_output_budget_stops_before_the_calls_and_never_announces_them(workspace: Path) -> None:
    run = harness("flat-tool", "openai-responses", workspace, "--max-output-tokens", "5")
    assert run.kinds()[1:] == ["turn-started", "tool-arguments-delta", "usage", "finished"]
    assert run.lines[-1]["stop"] == {"kind": "max-output-tokens", "limit": 5, "reported": 8}
    assert run.code == 2


def test_prices_give_cost_lines_and_a_cost_budget(workspace: Path, tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    price = {"input_usd_per_mtok": 3.0, "cached_input_usd_per_mtok": 0.3, "output_usd_per_mtok": 15.0}
    prices.write_text(json.dumps({"source": "t", "as_of": "2026-11-30", "models": {"b10x-emulated": price}}))
    run = harness("flat-tool", "anthropic-messages", workspace, "--prices", str(prices), "--max-cost-microunits", "300")
    costs = [line for line in run.lines if line["kind"] == "cost"]
    assert costs == [{"kind": "cost", "model": "b10x-emulated", "micro_usd": 228}, {"kind": "cost", "model": "b10x-emulated", "micro_usd": 168}]
    assert run.lines[-1]["stop"] == {"kind": "max-cost", "limit_micro_usd": 300, "spent_micro_usd": 396}


def test_the_deadline_cancels_the_in_flight_request(workspace: Path) -> None:
    """The loop's one real-timer deadline test, against an endpoint that never answers: only the deadline
    can end the turn, and 3 s is past a loaded machine's start-up to the first request (a 700 ms one
    against a streamed answer expired before turn 1 under load)."""
    with silent_endpoint() as base_url:
        argv = [HARNESS, "run", "--json", "--no-session", "--workspace", str(workspace), "--base-url", base_url]
        argv += ["--model", "b10x-emulated", "--wire", "openai-responses", "--max-duration-ms", "3000", "--input", "go"]
        done = subprocess.run(argv, capture_output=True, timeout=LOOP_READ_S / 3, check=False)  # not the read timeout
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[-1] == {"kind": "finished", "stop": {"kind": "deadline", "limit_ms": 3000}, "turns": 1}
    assert done.returncode == 2


def _start(base_url: str, workspace: Path, *extra: str) -> subprocess.Popen[bytes]:
    argv = [HARNESS, "run", "--json", "--no-session", "--workspace", str(workspace), "--base-url", base_url]
    return subprocess.Popen(
        [*argv, "--model", "b10x-emulated", *extra, "--input", "go"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _read_until(process: subprocess.Popen[bytes], kind: str) -> list[dict[str, Any]]:
    assert process.stdout is not None
    lines: list[dict[str, Any]] = []
    while not lines or lines[-1]["kind"] != kind:
        lines.append(json.loads(process.stdout.readline()))
    return lines


def test_sigterm_cancels_like_sigint(workspace: Path, tmp_path: Path) -> None:
    with emulator("slow", tmp_path / "r.jsonl") as base_url:
        process = _start(base_url, workspace)
        _read_until(process, "turn-started")
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
    assert json.loads(out.splitlines()[-1])["stop"] == {"kind": "cancelled", "reason": "the caller cancelled"}
    assert process.returncode == 2


def test_a_second_signal_while_cancelling_exits_130_at_once() -> None:
    script = (
        "import os, signal, time\n"
        "from metaharness.shell.loop.cancel import CancelToken\n"
        "token = CancelToken(None, time.monotonic())\n"
        "token.install()\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "print('first', token.cancelled, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "print('not reached', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False)
    assert (done.returncode, done.stdout) == (130, "first True\n")


def test_cancel_while_the_caller_is_asked(workspace: Path, tmp_path: Path) -> None:
    with emulator("flat-write", tmp_path / "r.jsonl") as base_url:
        process = _start(base_url, workspace, "--approve", "caller")
        _read_until(process, "approval-required")
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=60)
    rest = [json.loads(line) for line in out.splitlines()]
    assert rest == [
        {"kind": "approval-resolved", "call_id": "call_b10x_001", "approved": False},
        {"kind": "tool-completed", "call_id": "call_b10x_001", "failed": True},
        {"kind": "finished", "stop": {"kind": "cancelled", "reason": "the caller cancelled"}, "turns": 1},
    ]
    assert process.returncode == 2
    assert not (workspace / "note.md").exists()


def test_plain_mode_streams_the_answer(workspace: Path, tmp_path: Path) -> None:
    with emulator("text", tmp_path / "r.jsonl") as base_url:
        done = subprocess.run(
            [HARNESS, "run", "--no-session", "--quiet", "--workspace", str(workspace), "--base-url", base_url,
             "--model", "m", "--input", "go"],
            capture_output=True, timeout=60, check=False, stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0
    assert done.stdout == b"provider emulation passed\n"
