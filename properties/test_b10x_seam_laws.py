"""Properties of the b10x seam (docs/adapters/b10x.md#reading-the-record, #caller-seam, docs/events.md#framing-keys,
#stream-ending; docs/decisions.md): whatever the record holds."""

from __future__ import annotations

import msgspec
from event_lines import written
from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.b10x.records import read_record
from metaharness.pure.b10x.replay import record_lines, replay_settings
from metaharness.pure.b10x.seam import (
    UNEXPECTED_REASON,
    AnswerLine,
    SeamState,
    end_of_record,
    expire,
    mapped_line,
    open_seam,
    read_line,
    take_command,
    wind_up,
)
from metaharness.pure.commands import Halt, ToolDecide
from metaharness.pure.decisions import Arm
from metaharness.pure.events import Allow, UnknownProcess
from metaharness.pure.frames import seal_frame

CALLS = st.sampled_from(["call_1", "call_2", "call_3"])
TOOLS = st.sampled_from(["file_read", "file_write", "file_edit", "run", "dir_list", "shell.exec", "find"])
ARGS = st.sampled_from([{"path": "note.md"}, {"path": "src/a.py"}, {}, {"argv": ["cargo", "test"]}, "not an object"])


def _line(value: object) -> bytes:
    return msgspec.json.encode(value)


RECORD_LINE = st.one_of(
    st.builds(lambda c, t, a: _line({"kind": "tool-requested", "call_id": c, "name": t, "arguments": a}), CALLS, TOOLS, ARGS),
    st.builds(lambda c: _line({"kind": "approval-required", "call_id": c, "name": "file_write"}), CALLS),
    st.builds(lambda c, ok: _line({"kind": "approval-resolved", "call_id": c, "approved": ok}), CALLS, st.booleans()),
    st.builds(lambda c, f: _line({"kind": "tool-completed", "call_id": c, "failed": f}), CALLS, st.booleans()),
    st.builds(lambda n: _line({"kind": "turn-started", "turn": n}), st.integers(1, 4)),
    st.builds(lambda t: _line({"kind": "text-delta", "text": t}), st.text(max_size=5)),
    st.builds(lambda t: _line({"kind": "reasoning-delta", "text": t}), st.text(max_size=5)),
    st.just(_line({"kind": "turn-retried", "turn": 1, "attempt": 1, "reason": "cut"})),
    st.just(_line({"kind": "warning", "code": "unpublished-tool", "message": "m"})),
    st.just(_line({"kind": "usage", "model": "m", "input_tokens": 1, "output_tokens": 2, "cached_input_tokens": 0})),
    st.just(_line({"kind": "cost", "model": "m", "micro_usd": 7})),
    st.just(_line({"kind": "started", "model": "m", "published_tools": ["file_read", "file_write"]})),
    st.sampled_from([_line({"kind": "finished", "stop": {"kind": k}, "turns": 1}) for k in ("completed", "max-turns", "cancelled")]),
    st.sampled_from([b"", b"not json", b"[1,2]", b'{"kind":"delegated"}', b'{"kind":"turn-started","turn":"x"}']),
)
RECORD = st.lists(RECORD_LINE, max_size=25).map(lambda lines: b"\n".join(lines))

READS = [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]
FRAME = seal_frame(
    {
        "workflow": {"id": "w", "version": "1"},
        "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [], "obligations": [], "reaching": [], "next": [], "handoff": {"handoff": "none"},
        "operations": [*READS, {"op": "file.write"}],
        "subjects": [{"subject": "file:note.md", "operations": [*READS, {"op": "file.write"}]}, {"subject": "**", "operations": READS}],
    }
).unwrap()

# Between record lines, what the embedder or the clock may do to an ask run.
ACTION = st.one_of(
    st.none(),
    st.builds(lambda c: ("decide", c), CALLS),
    st.builds(lambda c: ("expire", c), CALLS),
    st.just(("halt", "")),
)


def run_seam(mode: str, record: bytes, actions: list) -> tuple[list[dict], list[object]]:
    state: SeamState
    state, effects = open_seam(replay_settings(decisions=mode, frame=FRAME if mode != "observe" else None, transcript_path="r"))
    performed = list(effects)
    actions = list(actions)
    for number, line in record_lines(record):
        state, effects = read_line(state, number, line)
        performed.extend(effects)
        action = actions.pop() if actions else None
        if action is None:
            continue
        if action[0] == "decide":
            state, effects, _ = take_command(state, ToolDecide(id="c", call_id=action[1], decision=Allow()), 5)
        elif action[0] == "expire":
            state, effects = expire(state, action[1], 25000)
        else:
            state, effects, _ = take_command(state, Halt(id="h", reason="stop"), None)
        performed.extend(effects)
    state, effects = end_of_record(state)
    performed.extend(effects)
    state, effects = wind_up(state, process=UnknownProcess())
    performed.extend(effects)
    events = [msgspec.json.decode(e) for e in written(state.stream.run, performed)]
    return events, performed


MODES = st.sampled_from(["observe", "frame", "ask"])


@settings(max_examples=150, deadline=None)
@given(MODES, RECORD, st.lists(ACTION, max_size=25))
def test_seq_has_no_gaps_and_one_marker_closes_last(mode: str, record: bytes, actions: list) -> None:
    events, _ = run_seam(mode, record, actions)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["event"] for e in events].count("stream.closed") == 1
    assert events[-1]["event"] == "stream.closed" and events[-1]["events"] == len(events) - 1


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["frame", "ask"]), RECORD, st.lists(ACTION, max_size=25))
def test_every_asked_call_is_decided_exactly_once(mode: str, record: bytes, actions: list) -> None:
    """An unexpected question (docs/adapters/b10x.md#caller-seam) is answered and decided on its own, outside the
    held call's count."""
    events, performed = run_seam(mode, record, actions)
    latest: dict[str, str] = {}
    decided_keys: list[tuple[str, str]] = []
    asked: set[tuple[str, str]] = set()
    for event in events:
        if event["event"] == "tool.requested" and event["seam"] == "control_request":
            latest[event["call_id"]] = msgspec.json.encode(event["input"]).decode()
            asked.add((event["call_id"], latest[event["call_id"]]))
        elif event["event"] == "tool.decided" and event["decision"].get("reason") == UNEXPECTED_REASON:
            continue
        elif event["event"] == "tool.decided" and event["call_id"] in latest:
            decided_keys.append((event["call_id"], latest[event["call_id"]]))
    assert len(decided_keys) == len(set(decided_keys)), "a call was decided twice"
    assert set(decided_keys) == asked, "an asked call went undecided"
    answers = [e for e in performed if isinstance(e, AnswerLine)]
    assert len(answers) >= len(decided_keys)
    assert mode == "ask" or not [e for e in performed if isinstance(e, Arm)]


@settings(max_examples=150, deadline=None)
@given(RECORD)
def test_observe_never_decides(record: bytes) -> None:
    events, performed = run_seam("observe", record, [])
    assert not [e for e in events if e["event"] == "tool.decided"]
    assert not [e for e in performed if isinstance(e, AnswerLine | Arm)]
    assert all(e["seam"] == "none" and not e["decision_required"] for e in events if e["event"] == "tool.requested")


@settings(max_examples=100, deadline=None)
@given(RECORD)
def test_census_counts_what_was_decided_before_it(record: bytes) -> None:
    events, _ = run_seam("frame", record, [])
    for index, event in enumerate(events):
        if event["event"] == "session.ended":
            before = [e for e in events[:index] if e["event"] == "tool.decided"]
            census = event["census"]
            assert census["allowed"] + census["denied"] + census["abstained"] + census["replaced"] == len(before)
            assert census["denied"] == sum(e["decision"]["decision"] == "deny" for e in before)


STREAMING_LINE = st.one_of(
    st.builds(lambda n: _line({"kind": "turn-started", "turn": n}), st.integers(1, 4)),
    st.builds(lambda t: _line({"kind": "text-delta", "text": t}), st.text(max_size=3)),
    st.builds(lambda t: _line({"kind": "reasoning-delta", "text": t}), st.text(max_size=3)),
    st.builds(lambda c: _line({"kind": "warning", "code": c, "message": "m"}), st.sampled_from(["w1", "w2"])),
    st.just(_line({"kind": "turn-retried", "turn": 1, "attempt": 1, "reason": "cut"})),
    st.just(_line({"kind": "usage", "model": "m", "input_tokens": 1})),
    st.builds(lambda c: _line({"kind": "tool-completed", "call_id": c, "failed": False}), CALLS),
    st.just(_line({"kind": "finished", "stop": {"kind": "completed"}, "turns": 1})),
)


def buffered_by_a_list(lines: list[bytes]) -> tuple[list[tuple[str, object]], list[object]]:
    """What docs/adapters/b10x.md#reading-the-record's attempt buffer releases, modelled with a plain list: each event
    as (name, text or code or call id), and each ``final_answer`` text of a ``finished``."""
    released: list[tuple[str, object]] = []
    finals: list[object] = []
    attempt: list[tuple[str, object]] | None = None
    turn_text: list[str] = []

    def emit(items: list[tuple[str, object]]) -> None:
        released.extend(items)
        turn_text.extend(str(value) for name, value in items if name == "text")

    for line in lines:
        record = msgspec.json.decode(line)
        kind = record["kind"]
        if kind in ("text-delta", "reasoning-delta", "warning"):
            item = ("warning", record["code"]) if kind == "warning" else (
                "text" if kind == "text-delta" else "thinking", record["text"]
            )
            if attempt is not None:
                attempt.append(item)
            else:
                emit([item])
            continue
        if kind == "turn-retried":
            emit([item for item in attempt or [] if item[0] == "warning"])
            emit([("warning", "attempt-discarded")])
            attempt = []
            continue
        emit(attempt or [])
        attempt = None
        if kind == "turn-started":
            released.append(("turn.started", record["turn"]))
            attempt, turn_text[:] = [], []
        elif kind == "usage":
            released.append(("usage", "m"))
        elif kind == "tool-completed":
            released.append(("tool.result", record["call_id"]))
        elif not finals:
            released.append(("session.ended", None))
            finals.append("".join(turn_text) or None)
        else:
            released.append(("opaque", None))
    emit(attempt or [])
    return released, finals


@settings(max_examples=200, deadline=None)
@given(st.lists(STREAMING_LINE, max_size=40))
def test_the_attempt_buffer_releases_what_a_list_model_releases(lines: list[bytes]) -> None:
    state, _ = open_seam(replay_settings(transcript_path="r"))
    performed: list[object] = []
    for number, line in enumerate(lines, start=1):
        state, effects = read_line(state, number, line)
        performed.extend(effects)
    state, effects = end_of_record(state)
    performed.extend(effects)
    events = [msgspec.json.decode(e) for e in written(state.stream.run, performed)]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    value = {"text": "text", "thinking": "text", "warning": "code", "turn.started": "turn", "tool.result": "call_id"}
    seen = [(e["event"], e.get(value.get(e["event"], ""), "m" if e["event"] == "usage" else None)) for e in events]
    released, finals = buffered_by_a_list(lines)
    assert seen == released
    answers = [e["final_answer"] and e["final_answer"]["text"] for e in events if e["event"] == "session.ended"]
    assert answers == finals


@settings(max_examples=200, deadline=None)
@given(MODES, RECORD)
def test_the_quick_steps_reach_what_the_general_path_reaches(mode: str, record: bytes) -> None:
    """Each record ``read_line`` maps in one quick step (``_QUICK``) gives the state and effects the general path
    (``mapped_line``) gives from the same state, whatever came before."""
    state: SeamState
    state, _ = open_seam(replay_settings(decisions=mode, frame=FRAME if mode != "observe" else None, transcript_path="r"))
    for number, line in record_lines(record):
        assert read_line(state, number, line) == mapped_line(state, number, line, read_record(line))
        state, _ = read_line(state, number, line)
