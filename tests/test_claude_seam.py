"""Claude Code's stream-json record mapping, hook answers and replay (docs/adapters/common.md#vendor-decisions;
docs/adapters/claude.md, docs/events.md#replay)."""

from __future__ import annotations

import msgspec
import pytest

from metaharness.pure.catalogue import load_catalogue
from metaharness.pure.claude.control import hook_output
from metaharness.pure.claude.rendering import claude_operations, claude_subjects, resolve_claude_call
from metaharness.pure.claude.replay import replay_claude, replay_facts
from metaharness.pure.claude.seam import RecordState, map_record
from metaharness.pure.events import Abstain, Allow, Decision, Deny, Replace, read_event
from metaharness.pure.frames import Operation
from metaharness.pure.jsonline import compact, sha256_hex

FACTS = replay_facts(decisions="observe", hermetic="off", transcript_path="t.jsonl", harness_version=None, model=None)

INIT = {
    "type": "system", "subtype": "init", "cwd": "/w", "session_id": "s1", "tools": ["Bash", "Write"],
    "mcp_servers": [], "model": "claude-opus-5-5", "permissionMode": "default", "slash_commands": [],
    "apiKeySource": "none", "claude_code_version": "2.1.332", "output_style": "default", "agents": ["Plan"],
    "skills": [], "plugins": [{"name": "cc-plugin-privacy", "path": "builtin", "source": "cc-plugin-privacy@builtin"}],
}  # fmt: skip
CALL = {
    "type": "assistant", "timestamp": "2026-11-30T01:00:00.000Z",
    "message": {"id": "msg_1", "model": "m", "content": [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {"file_path": "/w/note.md", "content": "x"}},
    ], "usage": {"input_tokens": 35, "output_tokens": 1, "output_tokens_details": {"thinking_tokens": 2},
                 "iterations": [{}, {}]}},
}  # fmt: skip
RESULT_BLOCK = {
    "type": "user", "timestamp": "2026-11-30T01:00:01.000Z",
    "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
    "tool_use_result": {"type": "create"},
}  # fmt: skip
RESULT = {
    "type": "result", "subtype": "success", "is_error": False, "num_turns": 2, "duration_ms": 5,
    "stop_reason": "end_turn", "terminal_reason": "completed", "api_error_status": None, "total_cost_usd": 0.5,
    "permission_denials": [{"tool_name": "Write", "tool_use_id": "toolu_9", "tool_input": {"b": 1, "a": 2}}],
    "subagent_stats": {"spawned": 0}, "usage": {"input_tokens": 70},
    "modelUsage": {"m": {"inputTokens": 70, "outputTokens": 12, "costUSD": 0.5}},
}  # fmt: skip


def lines(*records: object) -> bytes:
    return b"".join((record if isinstance(record, bytes) else compact(record)) + b"\n" for record in records)


def events(record: bytes) -> list[dict[str, object]]:
    stream, _ = replay_claude(record, FACTS, "golden")
    decoded = [msgspec.json.decode(line) for line in stream.splitlines()]
    for line in stream.splitlines():
        assert isinstance(read_event(line).unwrap().seq, int)
    assert [event["seq"] for event in decoded] == list(range(1, len(decoded) + 1))
    return decoded


def test_a_whole_record_maps_in_order_and_closes_completed() -> None:
    out = events(lines(INIT, CALL, RESULT_BLOCK, RESULT))
    assert [e["event"] for e in out] == [
        "session.started", "thinking", "tool.requested", "usage", "tool.result", "session.ended", "stream.closed",
    ]  # fmt: skip
    started = out[0]
    assert started["harness_version"] == "2.1.332" and started["credential_source"] == "none"
    assert started["plugins"] == [{"name": "cc-plugin-privacy", "source": "cc-plugin-privacy@builtin", "version": None}]
    assert "at" not in started
    requested = out[2]
    assert requested == {
        "format": "metaharness.event/1", "seq": 3, "run": "golden", "at": "2026-11-30T01:00:00.000Z",
        "event": "tool.requested", "call_id": "toolu_1", "name": "Write",
        "input": {"file_path": "/w/note.md", "content": "x"}, "operations": ["file.write"],
        "subjects": ["file:note.md"], "decision_required": False, "deadline_ms": None, "seam": "none",
    }  # fmt: skip
    assert out[3]["usage"]["thinking_tokens"] == 2 and out[3]["usage"]["iterations"] == 2  # type: ignore[index]
    assert out[4]["tool_use_result"] == {"type": "create"} and out[4]["bytes"] == 2
    ended = out[5]
    assert ended["model_usage"] == {
        "m": {"input_tokens": 70, "output_tokens": 12, "cache_read_input_tokens": None,
              "cache_creation_input_tokens": None, "service_tier": None, "thinking_tokens": None,
              "iterations": None, "speed": None, "cost_usd": 0.5}
    }  # fmt: skip
    assert ended["permission_denials"] == [{"tool_name": "Write", "tool_use_id": "toolu_9", "tool_input": {"b": 1, "a": 2}}]
    assert ended["census"] == {"allowed": 0, "denied": 0, "replaced": 0, "abstained": 0, "by_seam": {}, "by_decider": {}}
    assert out[-1]["reason"] == "completed" and out[-1]["process"] == {"kind": "unknown"}


def test_unreadable_and_unknown_records_are_opaque_and_blank_lines_count() -> None:
    raw = lines(INIT, b"not json", b"", {"type": "keep_alive"}, {"type": "stream_event", "event": {}}, INIT)
    out = events(raw)
    opaque = [e for e in out if e["event"] == "opaque"]
    assert [(e["vendor_type"], e["source_line"]) for e in opaque] == [
        (None, 2), ("keep_alive", 4), ("stream_event", 5), ("system", 6),
    ]  # fmt: skip
    assert opaque[0]["digest"] == sha256_hex(b"not json")
    assert out[-1]["reason"] == "error"


def test_system_records_thinking_estimate_and_api_retry() -> None:
    out = events(
        lines(
            {"type": "system", "subtype": "thinking_tokens", "estimated_tokens": 10, "estimated_tokens_delta": 3},
            {"type": "system", "subtype": "thinking_tokens"},
            {"type": "system", "subtype": "api_retry", "attempt": 2, "error_status": 529},
        )
    )
    assert out[0]["event"] == "thinking.estimate" and (out[0]["estimate"], out[0]["delta"]) == (10, 3)
    assert out[1]["event"] == "opaque"
    assert out[2]["code"] == "VENDOR_API_RETRY" and "attempt 2" in str(out[2]["message"]) and "529" in str(out[2]["message"])


def test_rate_limit_and_user_injections() -> None:
    out = events(
        lines(
            {"type": "rate_limit_event", "rate_limit_info": {"status": "allowed", "rateLimitType": "five_hour",
                                                              "resetsAt": 17, "utilization": 0.5, "isUsingOverage": False}},
            {"type": "user", "message": {"content": "hello"}, "isSynthetic": True},
            {"type": "user", "message": {"content": [{"type": "text", "text": "more"}, {"type": "image"}]}},
        )
    )  # fmt: skip
    assert out[0]["info"] == {"status": "allowed", "window": "five_hour", "resets_at": 17, "utilization": 0.5,
                              "using_overage": False}  # fmt: skip
    assert (out[1]["event"], out[1]["origin"]) == ("injection", "synthetic")
    assert (out[2]["text"], out[2]["origin"]) == ("more", "user")
    assert out[3]["event"] == "opaque"


def test_an_expiry_phrase_emits_auth_expired_first() -> None:
    failed = {**RESULT, "is_error": True, "subtype": "error", "result": "OAuth token: Please run /login"}
    out = events(lines(INIT, failed))
    assert [e["event"] for e in out[1:3]] == ["auth.expired", "session.ended"]
    assert out[1]["credential_source"] == "none" and out[1]["source_line"] == 2
    assert out[-1]["reason"] == "error"


def test_an_identical_usage_repeat_for_one_message_is_dropped() -> None:
    split = {**CALL, "message": {**CALL["message"], "content": [{"type": "text", "text": "a"}]}}  # type: ignore[dict-item]
    out = events(lines(split, split))
    assert [e["event"] for e in out] == ["text", "usage", "text", "stream.closed"]


def test_an_off_pin_version_warns_directly_before_session_started() -> None:
    out = events(lines({**INIT, "claude_code_version": "2.1.300"}))
    assert (out[0]["code"], out[1]["event"]) == ("VERSION_OFF_PIN", "session.started")


def test_a_budget_terminal_closes_budget() -> None:
    out = events(lines(INIT, {**RESULT, "is_error": True, "subtype": "error_max_turns"}))
    assert out[-1]["reason"] == "budget"


def test_a_held_call_without_result_is_still_written_at_stream_end() -> None:
    out = events(lines(INIT, CALL))
    assert "tool.requested" in [e["event"] for e in out]
    assert not any(e.get("code") == "COVERAGE_GAP" for e in out)


def test_map_record_keeps_a_later_result_opaque() -> None:
    state, _ = map_record(RecordState(), compact(RESULT), 1, FACTS)
    state, second = map_record(state, compact(RESULT), 2, FACTS)
    assert type(second[0].payload).__name__ == "Opaque"  # type: ignore[union-attr]


def claude_hook_answer(decision: Decision) -> bytes:
    return compact(hook_output(decision))


def test_hook_answers_for_the_four_decisions() -> None:
    assert claude_hook_answer(Allow()) == b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'
    assert claude_hook_answer(Deny("not now")) == (
        b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny",'
        b'"permissionDecisionReason":"not now"}}'
    )
    assert claude_hook_answer(Replace({"command": "ls", "a": 1})) == (
        b'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow",'
        b'"updatedInput":{"command":"ls","a":1}}}'
    )
    assert claude_hook_answer(Abstain()) == b"{}"
    for forbidden in (b"ask", b"defer", b"continue", b"stopReason", b"suppressOutput", b'"decision"'):
        assert all(forbidden not in claude_hook_answer(d) for d in (Allow(), Deny("r"), Replace({}), Abstain()))


@pytest.mark.parametrize(
    ("tool", "operations"),
    [("Read", ("file.read",)), ("Write", ("file.write",)), ("Edit", ("file.edit",)), ("Glob", ()),
     ("Grep", ()), ("Bash", ("shell",)), ("WebFetch", ("web.read",)), ("Skill", ("skill.load",)),
     ("Agent", ("subagent.spawn",)), ("Task", ()), ("TodoWrite", ()), ("ToolSearch", ()), ("NotebookEdit", ()),
     ("mcp__", ())],
)  # fmt: skip
def test_resolution_is_the_inverse_of_the_rendering(tool: str, operations: tuple[str, ...]) -> None:
    assert tuple(op.op for op in claude_operations(tool)) == operations


def test_mcp_tools_resolve_with_server_and_tool() -> None:
    assert claude_operations("mcp__files__read_doc") == (Operation("mcp.call", "files", "read_doc"),)


def test_subjects_follow_the_rendering_table() -> None:
    assert claude_subjects("Write", {"file_path": "/w/a/b.md"}, "/w") == ("file:a/b.md",)
    assert claude_subjects("Read", {"file_path": "/other/b.md"}, "/w") == ("file:/other/b.md",)
    assert claude_subjects("Bash", {"command": "git status"}, "/w") == ("proc:git",)
    assert claude_subjects("WebFetch", {"url": "x"}, "/w") == ()
    assert claude_subjects("Write", "not an object", "/w") == ()


@pytest.mark.parametrize(
    ("command", "program"),
    [("ls -la", "ls"), ("ls; rm x", "sh"), ("a && b", "sh"), ("cat <x", "sh"), ("echo `id`", "sh"),
     ("echo $(id)", "sh"), ("a\nb", "sh"), ("FOO=1 make", "sh"), ("make FOO=1", "make")],
)  # fmt: skip
def test_shell_subjects(command: str, program: str) -> None:
    assert claude_subjects("Bash", {"command": command}, "/w")[0] == f"proc:{program}"


def test_on_a_catalogue_run_only_metaharness_entries_resolve() -> None:
    catalogue = load_catalogue(
        b'{"format":"metaharness.catalogue/1","entries":[{"name":"read_note","description":"d","performs":"file_read",'
        b'"input":{"path":{"type":"string","required":true}}},{"name":"shout","description":"d","performs":"run"}]}',
        "tools.json",
    ).unwrap()
    ops, subjects = resolve_claude_call("mcp__metaharness__read_note", {"path": "notes/a.md"}, "/w", catalogue)
    assert ([op.op for op in ops], subjects) == (["file.read"], ("file:notes/a.md",))
    assert resolve_claude_call("mcp__metaharness__shout", {}, "/w", catalogue) == ((), ())
    assert resolve_claude_call("Bash", {"command": "ls"}, "/w", catalogue) == ((), ())
    assert resolve_claude_call("mcp__other__tool", {}, "/w", catalogue) == ((), ())
    native = resolve_claude_call("mcp__other__tool", {}, "/w", None)
    assert native == ((Operation("mcp.call", "other", "tool"),), ())
