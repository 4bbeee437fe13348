"""Laws of the pure codex session, whatever order the rollout lines, hook requests (answered or lost),
commands and deadlines arrive in: the stream is numbered without gaps and closed once, last; every
``tool.decided`` follows its call's ``tool.requested``; no call stays pending after the wind-up; and
the census ``session.ended`` carries counts exactly the decisions written."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.codex.replay import replay_launch
from metaharness.pure.codex.session import (
    Session,
    abandon_pending,
    delivered,
    end_of_record,
    expire,
    hook_request,
    open_session,
    read_line,
    take_command,
    wind_up,
)
from metaharness.pure.commands import read_command
from metaharness.pure.decisions import open_desk
from metaharness.pure.events import EventValue, Exited, Stream
from metaharness.pure.hook_channel import HookAnswer
from metaharness.pure.jsonline import compact
from metaharness.pure.stream_writer import write_line
from metaharness.pure.subjects import TreeFacts

CALLS = ("c1", "c2", "c3")


def rollout_line(kind: str, payload: dict[str, Any]) -> bytes:
    return compact({"timestamp": "2026-11-30T01:00:00.000Z", "type": kind, "payload": payload})


def announced(call_id: str) -> bytes:
    arguments = compact({"cmd": f"ls {call_id}"}).decode()
    return rollout_line(
        "response_item", {"type": "function_call", "name": "exec_command", "arguments": arguments, "call_id": call_id}
    )


def output(call_id: str) -> bytes:
    return rollout_line("response_item", {"type": "function_call_output", "call_id": call_id, "output": "ok"})


def request(call_id: str) -> bytes:
    return compact({"tool_use_id": call_id, "tool_name": "Bash", "tool_input": {"command": f"ls {call_id}"}})


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("line"), st.sampled_from(CALLS), st.sampled_from(["announced", "output"])),
        st.tuples(st.just("hook"), st.sampled_from(CALLS), st.booleans()),
        st.tuples(st.just("decide"), st.sampled_from(CALLS), st.sampled_from(["allow", "deny"])),
        st.tuples(st.just("expire"), st.sampled_from(CALLS), st.just(None)),
        st.tuples(st.just("interrupt"), st.just(""), st.just(None)),
        st.tuples(st.just("complete"), st.just(""), st.just(None)),
    ),
    max_size=14,
)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["ask", "observe"]), STEPS)
def test_the_stream_is_whole_and_the_census_counts_what_was_written(mode: str, steps) -> None:
    lines: list[dict[str, Any]] = []
    lost = [False]
    stream = [Stream("law")]

    def perform(session: Session, effects: tuple[object, ...]) -> Session:
        for effect in effects:
            if isinstance(effect, EventValue):
                stream[0], line = write_line(stream[0], effect)
                lines.append(json.loads(line))
            elif isinstance(effect, HookAnswer):
                session, more = delivered(session, not lost[0])
                session = perform(session, more)
        return session

    session, effects = open_session(
        open_desk(mode, None, 60_000),  # type: ignore[arg-type]
        replay_launch(decisions=mode, hermetic="off", transcript_path="r.jsonl"),  # type: ignore[arg-type]
        "law",
        TreeFacts("/w", {}),
    )
    session = perform(session, effects)
    number = 0
    for step, call_id, value in [("line", "", "meta"), *steps]:
        if step == "line":
            number += 1
            raw = (
                rollout_line("session_meta", {"id": "s", "cwd": "/w", "cli_version": "0.171.0"})
                if value == "meta"
                else announced(call_id) if value == "announced" else output(call_id)
            )
            session = perform(*read_line(session, number, raw))
        elif step == "hook":
            lost[0] = bool(value)
            session = perform(*hook_request(session, f"k{call_id}", request(call_id)))
        elif step == "decide":
            text = compact({"format": "metaharness.command/1", "command": "tool.decide", "id": f"d{call_id}",
                            "call_id": call_id, "decision": {"decision": value, **({"reason": "no"} if value == "deny" else {})}})  # fmt: skip
            session, effects, _ = take_command(session, read_command(text).unwrap(), 5)
            session = perform(session, effects)
        elif step == "expire":
            session = perform(*expire(session, call_id, 60_000))
        elif step == "interrupt":
            session = perform(*abandon_pending(session, "the run was interrupted"))
        else:
            number += 1
            raw = rollout_line("event_msg", {"type": "task_complete", "turn_id": "t", "last_agent_message": "done"})
            session = perform(*read_line(session, number, raw))
    session = perform(*end_of_record(session))
    session, effects, _ = wind_up(session, stderr_tail=b"", halted=False, killed=False, process=Exited(code=0))
    perform(session, effects)
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))
    assert [line["event"] for line in lines].count("stream.closed") == 1 and lines[-1]["event"] == "stream.closed"
    assert session.desk.pending_call_ids() == ()
    decided = [line for line in lines if line["event"] == "tool.decided"]
    for index, line in enumerate(lines):
        if line["event"] == "tool.decided":
            requested = [e for e in lines[:index] if e["event"] == "tool.requested" and e["call_id"] == line["call_id"]]
            assert requested
    ended = [line for line in lines if line["event"] == "session.ended"]
    if ended:
        census = ended[0]["census"]
        assert census["allowed"] + census["denied"] + census.get("replaced", 0) + census.get("abstained", 0) == len(
            decided
        )
