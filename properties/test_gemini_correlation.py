"""Gemini's correlation law (docs/adapters/gemini.md#correlation): however a run's hook calls and record lines
interleave, every call is requested exactly once, every hook call is presented on seam ``hook`` and answered once,
and each call's result is read under the id it was requested under; a call no hook delivered is a named gap."""

from __future__ import annotations

import json
from typing import Any

from event_lines import written
from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.events import EventValue, Exited, Hermetic, Transcript
from metaharness.pure.gemini.record import RecordFacts
from metaharness.pure.gemini.session import (
    STEPS,
    answered,
    hook_request,
    open_session,
    read_line,
    wind_up,
)
from metaharness.pure.hook_channel import HookAnswer

HERMETIC = Hermetic(mode="off", decisions="observe", imposed=(), declared=(), unavailable=(), ambient_inputs=(),
                    installed_plugins=())  # fmt: skip
FACTS = RecordFacts(transcript=Transcript(path="/s/r", digest=None, bytes=None), hermetic=HERMETIC, cwd="/w")
INPUTS = ({"file_path": "a.md", "content": "x"}, {"file_path": "b.md", "content": "x"}, {"command": "ls"})


@st.composite
def runs(draw: st.DrawFn) -> tuple[list[tuple[str, int]], list[int], set[int]]:
    """Calls (tool name, input index: twins happen), an interleaving in which each call's ``tool_use`` and hook
    (when a hook delivers it) come in either order before its result, and the calls a hook delivers."""
    count = draw(st.integers(min_value=1, max_value=5))
    calls: list[tuple[str, int]] = [
        ("write_file", draw(st.integers(0, 1))) if draw(st.booleans()) else ("run_shell_command", 2)
        for _ in range(count)
    ]
    hooked = {index for index in range(count) if draw(st.booleans()) or index == 0}
    events: list[tuple[str, int]] = []
    pending = {index: ["use", *(["hook"] if index in hooked else [])] for index in range(count)}
    done: list[int] = []
    while pending:
        index = draw(st.sampled_from(sorted(pending)))
        steps = pending[index]
        step = draw(st.sampled_from(steps)) if len(steps) == 2 else steps[0]
        steps.remove(step)
        events.append((step, index))
        if not steps:
            del pending[index]
            done.append(index)
    order = [*events, *(("result", index) for index in done)]
    return calls, order, hooked


def line(**record: Any) -> bytes:
    return json.dumps(record).encode()


@settings(max_examples=200, deadline=None)
@given(runs())
def test_every_interleaving_requests_each_call_once_under_one_id(run: Any) -> None:
    calls, order, hooked = run
    session = open_session(FACTS, "p", "observe", None)
    lines: list[object] = []
    answers: list[HookAnswer] = []

    def perform(taken: Any) -> None:
        nonlocal session
        session, effects = taken
        for effect in effects:
            if isinstance(effect, EventValue):
                lines.append(effect)
            elif isinstance(effect, HookAnswer):
                answers.append(effect)
                perform(answered(session, True))

    perform(read_line(session, 1, line(type="init", session_id="s")))
    for number, (step, index) in enumerate(order, start=2):
        name, which = calls[index]
        tool_id = f"{name}__c{index}"
        if step == "use":
            perform(read_line(session, number, line(type="tool_use", tool_name=name, tool_id=tool_id,
                                                    parameters=INPUTS[which])))  # fmt: skip
        elif step == "hook":
            request = {"tool_name": name, "tool_input": INPUTS[which], "cwd": "/w", "session_id": "s"}
            perform(hook_request(session, f"K{index}", json.dumps(request).encode()))
        else:
            perform(read_line(session, number, line(type="tool_result", tool_id=tool_id, status="success")))
    perform(read_line(session, len(order) + 2, line(type="result", status="success", stats={})))
    perform(STEPS.end_of_record(session))
    session, effects, _ = wind_up(session, process=Exited(code=0))
    events = [json.loads(item) for item in written("p", [*lines, *effects])]
    requested = [e for e in events if e["event"] == "tool.requested"]
    assert len(requested) == len(calls) == len({e["call_id"] for e in requested})
    assert sum(e["seam"] == "hook" for e in requested) == len(hooked)
    assert len(answers) == len(hooked) == len({answer.key for answer in answers})
    results = [e["call_id"] for e in events if e["event"] == "tool.result"]
    assert sorted(results) == sorted(e["call_id"] for e in requested)
    gaps = [e for e in events if e["event"] == "warning" and e["code"] == "COVERAGE_GAP"]
    assert len(gaps) == len(calls) - len(hooked)
    assert not [e for e in events if e["event"] == "warning" and e["code"] == "RESULT_UNOBSERVED"]
