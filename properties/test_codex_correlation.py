"""Properties of the codex seam: one presentation per call whatever the interleaving, nothing lost,
and a well-formed stream for any rollout bytes (docs/adapters/common.md#vendor-decisions; docs/adapters/codex.md;
docs/events.md#stream-ending)."""

from __future__ import annotations

import json

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.codex.replay import replay_launch, replay_rollout
from metaharness.pure.codex.rollout import RolloutReader, read_rollout_line, recorded_request
from metaharness.pure.correlation import Correlator, Present, on_hook_call, on_readings, on_stream_end
from metaharness.pure.events import Text, ToolRequested, ToolResult, read_event
from metaharness.pure.hook_channel import HookCall
from metaharness.pure.readings import Announced, Emitted, Finished


def _result(call_id: str) -> ToolResult:
    return ToolResult(
        exit_code=None, outcome_source=None, call_id=call_id, is_error=None, content="ok", bytes=2, tool_use_result=None
    )


@st.composite
def interleavings(draw: st.DrawFn) -> list[tuple[str, object]]:
    """Calls announced by the record, some also delivered by the hook (before or after their
    announcement, always before their result, since the hook runs before the call does), mixed with
    plain text readings, in any other order."""
    count = draw(st.integers(min_value=0, max_value=5))
    steps: list[tuple[str, object]] = []
    results: dict[str, tuple[str, object]] = {}
    for index in range(count):
        call_id = f"call_{index}"
        steps.append(("record", Announced(call_id, recorded_request(call_id, "apply_patch", "patch"))))
        results[call_id] = ("record", Finished(call_id, _result(call_id)))
        if draw(st.booleans()):
            steps.append(("hook", HookCall(f"k{index}", call_id, "apply_patch", {"command": "patch"}, True)))
    steps += [("record", Emitted(Text(text=f"t{n}", request_id=None))) for n in range(draw(st.integers(0, 4)))]
    order = list(draw(st.permutations(steps)))
    for call_id, result in results.items():
        last = max(i for i, (_, item) in enumerate(order) if getattr(item, "call_id", None) == call_id)
        order.insert(draw(st.integers(min_value=last + 1, max_value=len(order))), result)
    return order


@settings(max_examples=150)
@given(interleavings())
def test_each_call_is_presented_or_recorded_exactly_once_and_nothing_is_lost(steps):
    correlator = Correlator(live=True)
    outputs: list[object] = []
    for source, item in steps:
        if source == "hook":
            correlator, out = on_hook_call(correlator, item)
        else:
            correlator, out = on_readings(correlator, (item,))
        outputs.extend(out)
    correlator, out = on_stream_end(correlator)
    outputs.extend(out)
    assert not correlator.held
    presented = [o.call.call_id for o in outputs if isinstance(o, Present)]
    recorded = [o.payload.call_id for o in outputs if isinstance(o, Emitted) and isinstance(o.payload, ToolRequested)]
    announced = {item.call_id for _, item in steps if isinstance(item, Announced)}
    hooked = {item.call_id for source, item in steps if source == "hook"}
    assert sorted(presented) == sorted(hooked)
    assert sorted(recorded) == sorted(announced - hooked)
    results = [o.payload.call_id for o in outputs if isinstance(o, Emitted) and isinstance(o.payload, ToolResult)]
    assert sorted(results) == sorted(announced)
    texts = [o.payload.text for o in outputs if isinstance(o, Emitted) and isinstance(o.payload, Text)]
    assert texts == [item.payload.text for _, item in steps if isinstance(item, Emitted)]
    for call_id in announced:
        opened = next(
            i
            for i, o in enumerate(outputs)
            if (isinstance(o, Present) and o.call.call_id == call_id)
            or (isinstance(o, Emitted) and getattr(o.payload, "call_id", None) == call_id)
        )
        assert not isinstance(outputs[opened], Emitted) or isinstance(outputs[opened].payload, ToolRequested)


_line = st.one_of(
    st.binary(max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b),
    st.builds(
        lambda kind, sub, call: json.dumps(
            {"timestamp": "t", "type": kind, "payload": {"type": sub, "call_id": call, "turn_id": "u", "output": "o"}}
        ).encode(),
        st.sampled_from(["session_meta", "response_item", "event_msg", "turn_context", "other"]),
        st.sampled_from(
            ["function_call", "function_call_output", "task_started", "task_complete", "token_count", "error", "x"]
        ),
        st.sampled_from(["c1", "c2"]),
    ),
)


@settings(max_examples=100)
@given(st.lists(_line, max_size=12))
def test_any_rollout_replays_into_a_well_formed_stream(lines):
    launch = replay_launch(decisions="observe", hermetic="off", transcript_path="r.jsonl")
    stream, reason = replay_rollout(b"\n".join(lines) + b"\n", launch, "replay")
    events = stream.splitlines(keepends=True)
    for number, line in enumerate(events, start=1):
        assert read_event(line).unwrap().seq == number
    closing = json.loads(events[-1])
    assert closing["event"] == "stream.closed" and closing["events"] == len(events) - 1
    assert closing["reason"] == reason
    assert sum(1 for line in events if b'"event":"stream.closed"' in line) == 1
    ended = [json.loads(line) for line in events if b'"event":"session.ended"' in line]
    assert len(ended) <= 1
    assert (reason == "completed") == bool(ended and ended[0]["is_error"] is False)


_JSON_ISH = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["true", "false", "null", " true\n", "\ttrue\r", "truex", "nul", "\x0b{}", "\ufeff[]", "1e999"]),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4), lambda inner: st.lists(inner, max_size=3)
                 | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6).map(json.dumps)
    .flatmap(lambda text: st.tuples(st.sampled_from(["", " ", "\n\t"]), st.just(text), st.sampled_from(["", " ", "\r"])))
    .map("".join),
)  # fmt: skip


@settings(max_examples=300)
@given(_JSON_ISH, st.sampled_from(["arguments", "input"]))
def test_a_recorded_call_input_is_its_json_value_when_it_decodes_else_the_string(text: str, key: str) -> None:
    payload = {"type": "function_call", "call_id": "c1", "name": "exec", key: text}
    line = json.dumps({"timestamp": "t", "type": "response_item", "payload": payload}).encode()
    reader = RolloutReader(launch=replay_launch(decisions="observe", hermetic="off", transcript_path="r"))
    _, readings = read_rollout_line(reader, line, 1)
    try:
        expected = decode_bounded(text)
    except msgspec.DecodeError:
        expected = text
    assert isinstance(readings[0], Announced) and readings[0].requested.input == expected
