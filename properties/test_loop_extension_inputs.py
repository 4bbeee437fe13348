"""Laws of the loop's extension inputs and the task text (docs/loop-extensions.md): no bytes make the
app-server state machine, the skill/agent/plugin readers or the hooks reader raise; a refused input
is a named reason; a task with undecodable bytes is refused before anything starts, any UTF-8 task is not."""

from __future__ import annotations

import json
import os

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from metaharness.pure.loop.app_server import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Answered,
    BeginTurn,
    Bridge,
    Send,
    read_client_line,
)
from metaharness.pure.loop.hooks import parse_hooks
from metaharness.pure.loop.skills import parse_agent, parse_skill, plugin_name
from metaharness.pure.options import RunOptions, check_prompt_text

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
METHODS = st.sampled_from(["initialize", "thread/start", "turn/start", "turn/interrupt", "thread/resume",
                           "turn/steer", "initialized", "x/y"])


@given(st.binary(max_size=200))
def test_no_line_of_bytes_raises_and_every_answer_is_one_line(raw: bytes) -> None:
    _, steps = read_client_line(Bridge(version="1"), raw)
    for step in steps:
        assert isinstance(step, (Send, Answered, BeginTurn))
        if isinstance(step, Send):
            assert step.line.endswith(b"\n") and step.line.count(b"\n") == 1


@given(st.lists(st.tuples(st.integers(0, 5), METHODS, JSON), max_size=8))
def test_requests_are_answered_once_and_refusals_use_the_three_codes(messages: list) -> None:
    bridge = Bridge(version="1")
    for number, method, params in messages:
        line = json.dumps({"id": number, "method": method, "params": params}).encode()
        bridge, steps = read_client_line(bridge, line)
        answers = [json.loads(s.line) for s in steps if isinstance(s, Send) and b'"id"' in s.line[:8]]
        assert len(answers) == 1 and answers[0]["id"] == number
        if "error" in answers[0]:
            assert answers[0]["error"]["code"] in (INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR)
        if method in ("thread/resume", "turn/steer", "x/y", "initialized"):
            assert answers[0]["error"]["code"] == METHOD_NOT_FOUND
        if bridge.turn_id is None:
            assert not [s for s in steps if isinstance(s, BeginTurn)]


@given(st.binary(max_size=300), st.text(max_size=5))
def test_skill_agent_plugin_and_hooks_readers_never_raise(raw: bytes, prefix: str) -> None:
    for parsed in (parse_skill("f", raw, prefix), parse_agent("f", raw, prefix), plugin_name("f", raw),
                   parse_hooks("f", raw)):
        assert isinstance(parsed, (Success, Failure))
        if isinstance(parsed, Failure):
            assert parsed.failure()


@given(st.text(max_size=40), st.binary(min_size=1, max_size=6).filter(lambda b: not _utf8(b)))
def test_a_task_with_undecodable_bytes_is_refused_and_text_is_not(text: str, raw: bytes) -> None:
    assert isinstance(check_prompt_text(RunOptions(kind="b10x", prompt=text)), Success)
    refused = check_prompt_text(RunOptions(kind="b10x", prompt=text + os.fsdecode(raw)))
    assert isinstance(refused, Failure) and refused.failure().code == "prompt-not-utf8"


def _utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
