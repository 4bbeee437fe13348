"""Properties of the claude seam and session (docs/adapters/common.md#vendor-decisions; docs/adapters/claude.md,
docs/events.md#the-twenty-events, #warning-codes, #stream-ending; docs/decisions.md)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from event_lines import written
from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.claude.control import CALLBACK_ID, answer_body, answer_line
from metaharness.pure.claude.replay import replay_claude, replay_facts
from metaharness.pure.claude.session import (
    STEPS,
    ToChild,
    open_session,
    read_line,
    wind_up,
)
from metaharness.pure.events import Allow, Deny, EventValue, Exited, Replace, read_event
from metaharness.pure.frames import seal_frame
from metaharness.pure.hook_channel import doorbell_keys
from metaharness.pure.jsonline import compact
from metaharness.pure.program_subjects import command_subjects

FACTS = replay_facts(decisions="frame", hermetic="off", transcript_path="t", harness_version=None, model=None)
FRAME = seal_frame(
    {"format": "metaharness.frame/1", "workflow": {"id": "w", "version": "1"}, "node": {"id": "n"},
     "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 1}, "prior": [], "obligations": [],
     "reaching": [], "next": [], "handoff": {"handoff": "none"}, "operations": [{"op": "shell"}]}
).unwrap()  # fmt: skip

texts = st.text(max_size=20)
blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, texts),
    st.builds(lambda t: {"type": "thinking", "thinking": t}, texts),
    st.builds(lambda i, n: {"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": {"command": "ls"}},
              st.integers(0, 3), st.sampled_from(["Bash", "Write", "Nope"])),
    st.builds(lambda t: {"type": t}, st.sampled_from(["image", "server_tool_use", "redacted_thinking"])),
)
records = st.one_of(
    st.builds(lambda v: {"type": "system", "subtype": "init", "cwd": "/w", "claude_code_version": v},
              st.sampled_from(["2.1.332", "2.1.300"])),
    st.builds(lambda b: {"type": "assistant", "message": {"id": "m", "content": b, "usage": {"input_tokens": 1}}},
              st.lists(blocks, max_size=3)),
    st.builds(lambda i, e: {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "out", "is_error": e}]}},
        st.integers(0, 3), st.booleans()),
    st.builds(lambda s, e: {"type": "result", "subtype": s, "is_error": e},
              st.sampled_from(["success", "error_max_turns", "error_during_execution"]), st.booleans()),
    st.builds(lambda t: {"type": t}, st.sampled_from(["rate_limit_event", "keep_alive", "control_request", "zzz"])),
    st.builds(lambda i: {"type": "control_request", "request_id": f"r{i}", "request": {
        "subtype": "hook_callback", "callback_id": "metaharness-pretooluse",
        "input": {"tool_use_id": f"toolu_{i}", "tool_name": "Bash", "tool_input": {"command": "ls"}}}},
        st.integers(0, 3)),
    st.builds(lambda i: {"type": "control_cancel_request", "request_id": f"r{i}"}, st.integers(0, 3)),
    st.builds(lambda i: {"type": "control_response", "response": {"subtype": "success", "request_id": f"r{i}"}},
              st.integers(0, 3)),
    st.just(b'{"type":"user","message":{"role":"user","content":"echoed"},"isReplay":true}'),
    st.just(b"not json"),
    st.just(b""),
    st.just(b"[1,2]"),
)


def encoded(record: Any) -> bytes:
    return record if isinstance(record, bytes) else compact(record)


def assert_well_formed(stream: bytes) -> list[dict[str, Any]]:
    lines = stream.splitlines()
    for line in lines:
        read_event(line).unwrap()
    events = [json.loads(line) for line in lines]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["event"] for e in events].count("stream.closed") == 1
    assert events[-1]["event"] == "stream.closed" and events[-1]["events"] == len(events) - 1
    return events


@settings(max_examples=150, deadline=None)
@given(st.lists(records, max_size=12))
def test_any_transcript_replays_into_a_well_formed_stream(transcript: list[Any]) -> None:
    raw = b"\n".join(encoded(record) for record in transcript)
    stream, reason = replay_claude(raw, FACTS, "p")
    events = assert_well_formed(stream)
    assert events[-1]["reason"] == reason
    assert not any(e["event"] == "tool.decided" for e in events)
    ended = [e for e in events if e["event"] == "session.ended"]
    assert len(ended) <= 1
    if not ended:
        assert reason == "error"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_each_hooked_call_is_requested_and_decided_once_whatever_the_interleaving(
    calls: list[tuple[int, bool]], rng: Any
) -> None:
    """Each call's record line and its ``hook_callback`` may arrive in either order; a hooked call gets exactly one
    ``tool.requested`` on seam ``hook`` and one ``tool.decided``, and every callback gets its answer."""
    ids = list(dict.fromkeys(number for number, _ in calls))
    hooked = {number for number, with_hook in calls if with_hook}
    inputs: list[tuple[str, int]] = []
    for number in ids:
        pair = [("record", number)] + ([("hook", number)] if number in hooked else [])
        inputs += pair if rng.random() < 0.5 else pair[::-1]
    session, effects = open_session(FACTS, "p", "frame", FRAME)
    lines: list[object] = list(effects)
    answered_keys: list[str] = []

    def perform(effects: tuple[Any, ...]) -> None:
        nonlocal session
        for effect in effects:
            if isinstance(effect, EventValue):
                lines.append(effect)
            elif isinstance(effect, ToChild) and b'"type":"control_response"' in effect.line:
                answered_keys.append(msgspec.json.decode(effect.line)["response"]["request_id"])

    session, effects = read_line(session, 1, compact({"type": "system", "subtype": "init", "cwd": "/w"}))
    perform(effects)
    for position, (kind, number) in enumerate(inputs, start=2):
        if kind == "record":
            record = {"type": "assistant", "message": {"id": f"m{number}", "content": [
                {"type": "tool_use", "id": f"toolu_{number}", "name": "Bash", "input": {"command": "ls"}}]}}  # fmt: skip
            session, effects = read_line(session, position, compact(record))
        else:
            request = {"tool_use_id": f"toolu_{number}", "tool_name": "Bash", "tool_input": {"command": "ls"}}
            callback = {"subtype": "hook_callback", "callback_id": CALLBACK_ID, "input": request}
            line = compact({"type": "control_request", "request_id": f"K{number}", "request": callback})
            session, effects = read_line(session, position, line)
        perform(effects)
    session, effects = STEPS.end_of_record(session)
    perform(effects)
    session, effects, _ = wind_up(session, process=Exited(code=0))
    perform(effects)
    events = assert_well_formed(b"".join(written("p", lines)))
    for number in ids:
        requested = [e for e in events if e["event"] == "tool.requested" and e["call_id"] == f"toolu_{number}"]
        decided = [e for e in events if e["event"] == "tool.decided" and e["call_id"] == f"toolu_{number}"]
        assert len(requested) == 1
        assert requested[0]["seam"] == ("hook" if number in hooked else "none")
        assert len(decided) == (1 if number in hooked else 0)
    assert sorted(answered_keys) == sorted(f"K{number}" for number in hooked)


decisions = st.one_of(
    st.just(Allow()),
    st.builds(Deny, st.text(max_size=30)),
    st.builds(Replace, st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)),
)


@settings(max_examples=100)
@given(decisions)
def test_every_answer_is_one_control_response_line_a_deny_never_reasonless(decision: Any) -> None:
    line = answer_line(answer_body("r1", decision))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    response = msgspec.json.decode(line)["response"]
    assert (response["subtype"], response["request_id"]) == ("success", "r1")
    output = response["response"]["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert output["permissionDecision"] in ("allow", "deny")
    if isinstance(decision, Deny):
        assert output["permissionDecisionReason"].strip()


@settings(max_examples=200)
@given(st.text(max_size=40))
def test_a_compound_command_is_always_sh(command: str) -> None:
    subjects = command_subjects(command)
    if any(mark in command for mark in (";", "&", "|", "<", ">", "(", ")", "`", "$(", "\n")):
        assert subjects == ("proc:sh",)
    else:
        assert subjects == () if not command.strip() else subjects[0].startswith("proc:")


@settings(max_examples=150)
@given(
    st.lists(st.from_regex(r"[A-Za-z0-9]{8}", fullmatch=True), max_size=12),
    st.lists(st.integers(0, 200), max_size=8),
)
def test_doorbell_keys_survive_any_split_of_the_pipe_reads(keys: list[str], cuts: list[int]) -> None:
    """However the doorbell's bytes arrive across reads, the keys come out whole, in order, once."""
    data = b"".join(key.encode() + b"\n" for key in keys)
    points = sorted({min(cut, len(data)) for cut in cuts})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    found: list[str] = []
    pending = b""
    for chunk in chunks:
        got, pending = doorbell_keys(pending, chunk)
        found += got
    assert found == keys and pending == b""
