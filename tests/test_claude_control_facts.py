"""What the pinned Claude Code 2.1.332 does on its stdio control protocol, driven bare against ``b10x-emulator``
(docs/vendor-facts.md#the-control-protocol): the facts the in-band seam rests on, so a pin that moves fails here
first."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.emulator import running_emulator
from vendor_cli import PINS, pinned_cli

from metaharness.pure.claude.control import CALLBACK_ID, INITIALIZE_ID, user_message_line
from metaharness.pure.jsonline import compact

CLAUDE = pinned_cli("claude")
pytestmark = [
    pytest.mark.skipif(CLAUDE is None, reason=f"the pinned Claude Code {PINS['claude']} is not installed"),
    pytest.mark.usefixtures("own_home"),
]
Answer = Callable[[dict[str, Any]], dict[str, Any] | None]


@pytest.fixture
def root() -> Iterator[str]:
    with running_emulator("--scenario", "claude-write") as (base_url, _):
        yield base_url.removesuffix("/v1")


def drive(root: str, tmp_path: Path, answer: Answer, timeout_s: int = 60) -> tuple[list[dict[str, Any]], Path]:
    """The bare CLI with the in-band argv, one callback of ``timeout_s``; ``answer`` maps each ``hook_callback``
    to the ``response`` member written back (``None``: never answered). Returns every stdout line."""
    work, home = tmp_path / "work", tmp_path / "claude-home"
    work.mkdir()
    home.mkdir()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(home), "ANTHROPIC_BASE_URL": root,
           "ANTHROPIC_AUTH_TOKEN": "facts", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}  # fmt: skip
    argv = [str(CLAUDE), "-p", "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
            "--await-initialize", "--permission-prompts", "none", "--replay-user-messages", "--setting-sources", ""]  # fmt: skip
    child = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    matcher = {"matcher": "", "hookCallbackIds": [CALLBACK_ID], "timeout": timeout_s, "onFailure": "block"}
    request = {"subtype": "initialize", "hooks": {"PreToolUse": [matcher]}}
    child.stdin.write(compact({"type": "control_request", "request_id": INITIALIZE_ID, "request": request}) + b"\n")
    child.stdin.write(user_message_line("write the note"))
    child.stdin.flush()
    lines = []
    for raw in child.stdout:
        line = json.loads(raw)
        lines.append(line)
        if line["type"] == "control_request" and line["request"]["subtype"] == "hook_callback":
            body = answer(line)
            if body is not None:
                child.stdin.write(compact({"type": "control_response", "response": body}) + b"\n")
                child.stdin.flush()
        if line["type"] == "result":
            child.stdin.close()
    assert child.wait(timeout=60) == 0
    return lines, work / "note.md"


def success(line: dict[str, Any], decision: str) -> dict[str, Any]:
    output = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision}}
    return {"subtype": "success", "request_id": line["request_id"], "response": output}


def test_initialize_is_confirmed_and_every_call_is_a_callback_whose_answer_is_echoed(root: str, tmp_path: Path) -> None:
    lines, note = drive(root, tmp_path, lambda line: success(line, "allow"))
    reply = lines[0]["response"]
    assert reply["request_id"] == INITIALIZE_ID and reply["response"]["hooks_applied"] is True
    assert reply["response"]["hook_on_failure_supported"] is True
    callbacks = [line for line in lines if line["type"] == "control_request"]
    assert [c["request"]["input"]["tool_name"] for c in callbacks] == ["Write"]
    assert callbacks[0]["request"]["callback_id"] == CALLBACK_ID and callbacks[0]["request"]["tool_use_id"]
    echoes = [line for line in lines if line["type"] == "control_response" and line is not lines[0]]
    assert echoes == [{"type": "control_response", "response": success(callbacks[0], "allow")}]
    assert [line["message"]["content"] for line in lines if line.get("isReplay")] == ["write the note"]
    assert note.exists()


def test_an_error_answer_under_on_failure_block_does_not_run_the_call(root: str, tmp_path: Path) -> None:
    _, note = drive(root, tmp_path, lambda line: {"subtype": "error", "request_id": line["request_id"], "error": "x"})
    assert not note.exists()


def test_an_unanswered_callback_is_withdrawn_at_its_timeout_and_the_call_does_not_run(root: str, tmp_path: Path) -> None:
    lines, note = drive(root, tmp_path, lambda line: None, timeout_s=2)
    callback = next(line for line in lines if line["type"] == "control_request")
    assert {"type": "control_cancel_request", "request_id": callback["request_id"]} in lines
    assert not note.exists()
    results = [block for line in lines if line["type"] == "user" and isinstance(line["message"]["content"], list)
               for block in line["message"]["content"] if block.get("type") == "tool_result"]  # fmt: skip
    assert results[0]["is_error"] is True and "was not executed" in results[0]["content"]
