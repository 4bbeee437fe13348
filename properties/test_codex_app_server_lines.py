"""Property: whatever the app-server and the catalogue server write, the codex app-server machine
never raises, every line it sends is one compact JSON object, every ``item/tool/call`` it asks to
decide is open in the session, and no call is answered twice (docs/adapters/codex.md)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.catalogue import load_catalogue
from metaharness.pure.codex.app_server import (
    Decide,
    Perform,
    Send,
    Session,
    answer_decision,
    catalogue_server_gone,
    open_session,
    read_catalogue_server_line,
    read_server_line,
)
from metaharness.pure.events import Abstain, Allow, Deny, Replace

CATALOGUE = load_catalogue(
    json.dumps(
        {
            "format": "metaharness.catalogue/1",
            "entries": [{"name": "write_note", "description": "d", "performs": "file_write"}],
        }
    ).encode(),
    "t",
).unwrap()

METHODS = (
    "item/tool/call",
    "turn/completed",
    "item/tool/requestUserInput",
    "item/commandExecution/requestApproval",
    "mcpServer/elicitation/request",
    "attestation/generate",
    "item/started",
)
scalars = st.none() | st.booleans() | st.integers(-3, 5) | st.text(max_size=6)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
ids = st.integers(-1, 4) | st.text(max_size=3) | st.none() | st.booleans()
tool_params = st.fixed_dictionaries(
    {
        "threadId": st.just("t") | st.text(max_size=2),
        "callId": st.sampled_from(["a", "b"]) | values,
        "tool": st.sampled_from(["write_note", "exec"]) | values,
        "arguments": values,
    }
)
messages = st.one_of(
    st.fixed_dictionaries({"id": ids, "method": st.sampled_from(METHODS), "params": tool_params | values}),
    st.fixed_dictionaries({"method": st.sampled_from(METHODS), "params": tool_params | values}),
    st.fixed_dictionaries({"id": ids, "result": st.just({"thread": {"id": "t"}}) | values}),
    st.fixed_dictionaries({"id": ids, "error": values}),
    values,
)
server_lines = messages.map(lambda m: json.dumps(m).encode() + b"\n") | st.binary(max_size=20)
catalogue_lines = st.fixed_dictionaries(
    {"id": st.integers(0, 3) | values, "result": st.fixed_dictionaries({"content": values, "isError": values}) | values}
).map(lambda m: json.dumps(m).encode()) | st.binary(max_size=20)
decisions = st.sampled_from([Allow(), Abstain(), Deny("no")]) | values.map(Replace)
actions = st.lists(
    st.tuples(st.just("server"), server_lines)
    | st.tuples(st.just("catalogue"), catalogue_lines)
    | st.tuples(st.just("decide"), st.tuples(st.sampled_from(["a", "b"]), decisions))
    | st.tuples(st.just("gone"), st.none()),
    max_size=12,
)


def check_sent(step: Any, answered: list[Any]) -> None:
    if isinstance(step, Send | Perform):
        assert step.line.endswith(b"\n") and step.line.count(b"\n") == 1
        message = json.loads(step.line)
        assert isinstance(message, dict)
        if isinstance(step, Send) and isinstance(message.get("result"), dict) and "success" in message["result"]:
            answered.append(message["id"])


@settings(max_examples=150, deadline=None)
@given(actions)
def test_any_lines_from_the_servers_never_crash_the_machine(steps: list[tuple[str, Any]]) -> None:
    session: Session
    session, _ = open_session(
        version="0", cwd="/w", model=None, sandbox="read-only", catalogue=CATALOGUE, user_turn="go"
    )
    answered: list[Any] = []
    asked = 0
    for kind, item in steps:
        if kind == "server":
            asked += _is_tool_call(item)
            session, out = read_server_line(session, item)
        elif kind == "catalogue":
            session, out = read_catalogue_server_line(session, item)
        elif kind == "decide":
            session, out = answer_decision(session, item[0], item[1])
        else:
            session, out = catalogue_server_gone(session)
        for step in out:
            check_sent(step, answered)
            if isinstance(step, Decide):
                assert any(call.call_id == step.call_id for call in session.calls)
        open_ids = [call.call_id for call in session.calls]
        assert len(open_ids) == len(set(open_ids))
    assert len(answered) <= asked


def _is_tool_call(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return isinstance(message, dict) and "id" in message and message.get("method") == "item/tool/call"
