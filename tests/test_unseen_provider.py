"""The real ``b10x-harness`` against a provider it has never seen (issue 3's bar), on both wires.

The provider is ``tests/providers/unseen.py``: written from the real APIs' shapes, it shares no code
with the wires or the emulator and answers in every framing variant real services and gateways use.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from loop_process import SHORT_RETRY_WAITS
from providers.unseen import FINAL, NOTE, REFUSED, STYLES, Provider, Style, running_provider

HARNESS = str(Path(sys.executable).parent / "b10x-harness")
WIRES = ("openai-responses", "anthropic-messages")
KEY = "sk-unseen-provider-test-key"
PREAMBLE = "I'll take care of that now."


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def argv(provider: Provider, wire: str, workspace: Path, *extra: str) -> list[str]:
    return [
        HARNESS, "run", "--json", "--no-session", "--workspace", str(workspace), "--base-url", provider.base_url,
        "--model", "unseen-model-1", "--wire", wire, "--api-key-env", "UNSEEN_KEY", *extra, "--input", "write the note",
    ]


def environment() -> dict[str, str]:
    """The caller's environment with the key, retry waits short (the loop's testing knob)."""
    return {**SHORT_RETRY_WAITS, "UNSEEN_KEY": KEY}


class Done:
    def __init__(self, code: int, stdout: bytes, stderr: bytes, provider: Provider) -> None:
        self.code = code
        self.lines: list[dict[str, Any]] = [json.loads(line) for line in stdout.splitlines()]
        self.stderr = stderr.decode()
        self.seen = provider.seen

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["kind"] == kind]

    def text(self) -> str:
        """The answer as a consumer reads it: a turn's deltas before its latest ``turn-retried`` discarded."""
        done: list[str] = []
        turn: list[str] = []
        for line in self.lines:
            if line["kind"] in ("turn-started", "finished"):
                done += turn
                turn = []
            elif line["kind"] == "turn-retried":
                turn = []
            elif line["kind"] == "text-delta":
                turn.append(line["text"])
        return "".join(done)

    def assert_clean_completion(self, turns: int) -> None:
        assert self.code == 0, self.stderr
        assert self.lines[-1] == {"kind": "finished", "stop": {"kind": "completed"}, "turns": turns}
        assert not [w for w in self.of("warning") if w["code"] != "turn-retried"], self.of("warning")
        assert [s.error for s in self.seen if s.status == 400] == []


def harness(provider: Provider, wire: str, workspace: Path, *extra: str) -> Done:
    done = subprocess.run(argv(provider, wire, workspace, *extra), env=environment(), capture_output=True, timeout=60, check=False)
    return Done(done.returncode, done.stdout, done.stderr, provider)


def harness_with_caller(provider: Provider, wire: str, workspace: Path, answer: dict[str, str]) -> Done:
    """``--approve caller``: each ``approval-required`` is answered on stdin with ``answer`` for its call id."""
    child = subprocess.Popen(
        argv(provider, wire, workspace, "--approve", "caller"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(),
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    out: list[bytes] = []
    for line in iter(child.stdout.readline, b""):
        out.append(line)
        record = json.loads(line)
        if record["kind"] == "approval-required":
            child.stdin.write(json.dumps({"call_id": record["call_id"], **answer}).encode() + b"\n")
            child.stdin.flush()
    child.stdin.close()
    child.wait(timeout=60)
    return Done(child.returncode, b"".join(out), child.stderr.read(), provider)


def expected_text(style: Style, last: str) -> str:
    return (PREAMBLE if style.preamble else "") + last


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("style", STYLES, ids=[s.name for s in STYLES])
def test_approve_all_writes_through_the_tools_and_completes(wire: str, style: Style, workspace: Path) -> None:
    with running_provider("write", style, api_key=KEY) as provider:
        done = harness(provider, wire, workspace, "--approve", "all")
    done.assert_clean_completion(turns=2)
    assert (workspace / "note.md").read_text(encoding="utf-8") == NOTE
    assert done.text() == expected_text(style, FINAL)
    [requested] = done.of("tool-requested")
    assert requested["call_id"].startswith("call_" if (wire == "openai-responses") != style.swapped_ids else "toolu_")
    assert (requested["name"], requested["arguments"]) == ("file_write", {"path": "note.md", "text": NOTE})
    assert "".join(d["delta"] for d in done.of("tool-arguments-delta")) == json.dumps(
        requested["arguments"], ensure_ascii=False, separators=(",", ":")
    )
    assert done.of("tool-completed") == [{"kind": "tool-completed", "call_id": requested["call_id"], "failed": False}]
    usage = {"kind": "usage", "model": "unseen-model-1", "input_tokens": 1200, "output_tokens": 37, "cached_input_tokens": 1024}
    assert [{k: v for k, v in u.items() if k != "cache_creation_input_tokens"} for u in done.of("usage")] == [usage, usage]
    answered = [s for s in done.seen if s.status == 200]
    assert [len(s.results) for s in answered] == [0, 1] and answered[1].results[0].is_error is False
    assert len(done.of("warning")) == len(style.first_statuses)
    assert all(("Rate limit reached" in w["message"]) != ("Overloaded" in w["message"]) for w in done.of("warning"))
    assert len(done.of("turn-retried")) == (1 if style.first_stream_breaks else 0)
    if style.reasoning:
        assert "".join(r["text"] for r in done.of("reasoning-delta")) == "Planning the write first." * 2


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("style", [STYLES[0], STYLES[3], STYLES[4]], ids=lambda s: s.name)
def test_caller_denies_on_stdin_asks_once_and_keeps_the_tree_clean(wire: str, style: Style, workspace: Path) -> None:
    before = tree(workspace)
    with running_provider("write", style, api_key=KEY) as provider:
        done = harness_with_caller(provider, wire, workspace, {"decision": "deny", "reason": "not in this step"})
    done.assert_clean_completion(turns=2)
    assert tree(workspace) == before
    [asked] = done.of("approval-required")
    assert asked["name"] == "file_write"
    assert done.of("approval-resolved") == [{"kind": "approval-resolved", "call_id": asked["call_id"], "approved": False}]
    assert done.of("tool-completed") == [{"kind": "tool-completed", "call_id": asked["call_id"], "failed": True}]
    [result] = done.seen[-1].results
    assert result.is_error and "`file_write` was not approved: not in this step" in result.text
    assert done.text() == expected_text(style, REFUSED)


@pytest.mark.parametrize("wire", WIRES)
def test_caller_allows_on_stdin_and_the_write_happens(wire: str, workspace: Path) -> None:
    with running_provider("write", STYLES[1], api_key=KEY) as provider:
        done = harness_with_caller(provider, wire, workspace, {"decision": "allow"})
    done.assert_clean_completion(turns=2)
    assert [r["approved"] for r in done.of("approval-resolved")] == [True]
    assert (workspace / "note.md").read_text(encoding="utf-8") == NOTE


@pytest.mark.parametrize("wire", WIRES)
def test_parallel_calls_in_one_response_each_run_and_answered_together(wire: str, workspace: Path) -> None:
    with running_provider("parallel", STYLES[2], api_key=KEY) as provider:
        done = harness(provider, wire, workspace, "--approve", "all")
    done.assert_clean_completion(turns=2)
    assert (workspace / "a.md").read_text() == "first of two\n" and (workspace / "b.md").read_text() == "second of two\n"
    ids = [r["call_id"] for r in done.of("tool-requested")]
    assert len(set(ids)) == 2 and [c["call_id"] for c in done.of("tool-completed")] == ids
    assert [r.call_id for r in done.seen[-1].results] == ids


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("style", [STYLES[4], STYLES[5]], ids=lambda s: s.name)
def test_multi_turn_reads_then_writes_what_it_read(wire: str, style: Style, workspace: Path) -> None:
    with running_provider("multi", style, api_key=KEY) as provider:
        done = harness(provider, wire, workspace, "--approve", "all")
    done.assert_clean_completion(turns=3)
    assert (workspace / "note.md").read_text() == "README says: hello harness\n"
    assert [r["name"] for r in done.of("tool-requested")] == ["file_read", "file_write"]


@pytest.mark.parametrize("wire", WIRES)
def test_a_wrong_key_is_unauthorized_and_never_retried(wire: str, workspace: Path) -> None:
    with running_provider("write", STYLES[0], api_key="sk-another-key") as provider:
        done = harness(provider, wire, workspace, "--approve", "all")
    assert done.code == 1
    assert "answered 401" in done.stderr and KEY not in done.stderr
    assert len(done.seen) == 1 and not (workspace / "note.md").exists()


@pytest.mark.parametrize("wire", WIRES)
def test_an_answer_cut_at_the_output_bound_stops_provider_incomplete(wire: str, workspace: Path) -> None:
    with running_provider("ends-max-tokens", STYLES[2], api_key=KEY) as provider:
        done = harness(provider, wire, workspace, "--approve", "all")
    assert done.code == 2, done.stderr
    assert done.lines[-1] == {"kind": "finished", "stop": {"kind": "provider-incomplete", "reason": "max_output_tokens"}, "turns": 1}
    assert done.text() == "I was about to"


def test_messages_a_refusal_stops_with_its_category_and_explanation(workspace: Path) -> None:
    with running_provider("ends-refusal", STYLES[0], api_key=KEY) as provider:
        done = harness(provider, "anthropic-messages", workspace, "--approve", "all")
    assert done.code == 2, done.stderr
    assert done.lines[-1]["stop"] == {"kind": "provider-incomplete", "reason": "refusal"}
    assert [w["message"] for w in done.of("warning")] == [
        "Provider declined the response. Category: cyber Explanation: The request was declined."
    ]


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("ending", ["failed", "error"])
def test_a_failed_or_errored_stream_is_a_loop_error_without_finished(wire: str, ending: str, workspace: Path) -> None:
    with running_provider(f"ends-{ending}", STYLES[1], api_key=KEY) as provider:
        done = harness(provider, wire, workspace, "--approve", "all")
    assert done.code == 1
    assert not done.of("finished") and not done.of("turn-retried")
    assert len(provider.seen) == 1
    message = {"failed": "The model produced invalid content.", "error": "Invalid prompt: flagged."}[ending]
    if wire == "anthropic-messages":
        message = "Output blocked by content filtering policy"
    assert done.stderr.startswith("error: ") and message in done.stderr


@pytest.mark.parametrize("wire", WIRES)
def test_a_resumed_session_is_sent_back_in_a_shape_the_provider_accepts(wire: str, workspace: Path, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    style = STYLES[4]
    with running_provider("write", style, api_key=KEY) as provider:
        first = subprocess.run(
            [a for a in argv(provider, wire, workspace, "--yes", "--session-dir", str(sessions)) if a != "--no-session"],
            env=environment(), capture_output=True, timeout=60, check=False,
        )
        assert first.returncode == 0, first.stderr
        again = [a for a in argv(provider, wire, workspace, "--yes", "--session-dir", str(sessions), "--resume", "latest")
                 if a != "--no-session"]
        again[-1] = "and now?"
        second = subprocess.run(again, env=environment(), capture_output=True, timeout=60, check=False)
    assert second.returncode == 0, second.stderr
    assert [s.error for s in provider.seen if s.status == 400] == []
    assert [len(s.results) for s in provider.seen if s.status == 200] == [0, 1, 1]


@pytest.mark.parametrize("wire", WIRES)
def test_a_body_labelled_gzip_that_does_not_decode_is_a_named_protocol_error(wire: str, workspace: Path) -> None:
    with running_provider("write", Style("mislabelled-gzip", mislabelled_gzip=True), api_key=KEY) as provider:
        done = harness(provider, wire, workspace, "--approve", "all")
    assert done.code == 1 and "Traceback" not in done.stderr
    assert done.stderr == f"error: {wire} sent a body whose content coding does not decode: Error -3 while decompressing data: incorrect header check\n"
    assert len(provider.seen) == 1 and not done.of("finished")


@pytest.mark.parametrize("wire", WIRES)
def test_sigint_inside_a_slow_gzipped_kept_alive_stream_stops_cancelled(wire: str, workspace: Path) -> None:
    before = tree(workspace)
    with running_provider("write", Style("slow-gzip", gzip=True, chunk=40, pause_ms=300), api_key=KEY) as provider:
        child = subprocess.Popen(
            argv(provider, wire, workspace, "--approve", "all"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment()
        )
        assert child.stdout is not None
        for line in iter(child.stdout.readline, b""):
            if json.loads(line)["kind"] == "tool-arguments-delta":
                child.send_signal(signal.SIGINT)
                break
        rest, _ = child.communicate(timeout=30)
    assert child.returncode == 2
    assert json.loads(rest.splitlines()[-1]) == {"kind": "finished", "stop": {"kind": "cancelled", "reason": "the caller cancelled"}, "turns": 1}
    assert tree(workspace) == before and len(provider.seen) == 1
