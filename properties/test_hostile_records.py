"""A hostile record never breaks the offline mappings (docs/events.md#replay, docs/cli.md#project): every
kind's vector records, mutated as a hostile harness would write them (lines cut short, fields of the wrong
type, unknown record types, huge numbers, deep nesting, invalid UTF-8, duplicated lines, results moved
before their requests, lines past the terminal one), replay to one whole stream that ends in exactly one
``stream.closed`` with a documented exit (0 or 3), and that stream projects; a mutated event stream is
projected or refused ``projection-unreadable`` naming its line, and ``metaharness-view`` folds it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from metaharness.pure.adapter import ReplayRequest
from metaharness.pure.events import StreamClosed, read_event
from metaharness.pure.kind import Kind
from metaharness.pure.projection import survey_stream
from metaharness.pure.replays import record_lines, replay_whole
from metaharness.pure.run_stages import unaudited_exit
from metaharness.pure.run_view import ViewState, fold_view, view_exit
from metaharness.shell.vendor_vectors import vector_file
from metaharness.shell.view import read_lines

RECORDS: tuple[tuple[Kind, str], ...] = (
    ("claude", "record/bash.jsonl"),
    ("claude", "record/write.jsonl"),
    ("codex", "record/patch.jsonl"),
    ("codex", "record/shell.jsonl"),
    ("gemini", "record/shell.jsonl"),
    ("gemini", "record/write.jsonl"),
    ("b10x", "golden/loop.jsonl"),
)
STREAMS: tuple[tuple[str, str], ...] = tuple((kind, name.replace(".jsonl", ".expected.jsonl")) for kind, name in RECORDS)
CLOSING_REASONS = frozenset(("steer-halt", "killed", "error", "budget", "completed"))  # docs/events.md#stream-ending

HOSTILE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.just(10**400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _retyped(line: bytes, data: st.DataObject) -> bytes:
    """One field somewhere in ``line``'s object (two levels deep at most) given a hostile value, or removed."""
    try:
        value: Any = json.loads(line)
    except ValueError:
        return line
    holder = value
    for _ in range(data.draw(st.integers(0, 2))):
        children = [key for key, item in holder.items() if isinstance(item, dict) and item] if isinstance(holder, dict) else []
        if not children:
            break
        holder = holder[data.draw(st.sampled_from(sorted(children)))]
    if not isinstance(holder, dict) or not holder:
        return line
    key = data.draw(st.sampled_from(sorted(holder)))
    if data.draw(st.booleans()):
        holder[key] = data.draw(HOSTILE_VALUES)
    else:
        del holder[key]
    return json.dumps(value).encode()


def _mutated_line(line: bytes, data: st.DataObject) -> bytes:
    match data.draw(st.sampled_from(("cut", "retype", "unknown", "huge", "deep", "utf8"))):
        case "cut":
            return line[: data.draw(st.integers(0, max(len(line) - 1, 0)))]
        case "retype":
            return _retyped(line, data)
        case "unknown":
            return line.replace(b'"type":"', b'"type":"x-unknown-', 1) if b'"type":"' in line else b'{"type":"x"}'
        case "huge":
            return line.replace(b":1", b":1" + b"9" * 400, 1).replace(b":0", b":1e999", 1)
        case "deep":
            depth = data.draw(st.sampled_from((64, 127, 128, 129, 5000)))
            return line.rstrip(b"}") + b',"deep":' + b"[" * depth + b"]" * depth + b"}"
        case _:
            at = data.draw(st.integers(0, len(line)))
            return line[:at] + data.draw(st.sampled_from((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"))) + line[at:]


def _mutated(lines: list[bytes], data: st.DataObject) -> list[bytes]:
    """``lines`` after one to four hostile edits."""
    lines = list(lines)
    for _ in range(data.draw(st.integers(1, 4))):
        if not lines:
            break
        at = data.draw(st.integers(0, len(lines) - 1))
        match data.draw(st.sampled_from(("line", "duplicate", "earlier", "past-end", "drop"))):
            case "line":
                lines[at] = _mutated_line(lines[at], data)
            case "duplicate":
                lines.insert(at, lines[at])
            case "earlier":
                lines.insert(data.draw(st.integers(0, at)), lines.pop(at))
            case "past-end":
                lines.append(lines[at])
            case _:
                del lines[at]
    return lines


def _assert_one_closed_stream(stream: bytes) -> str:
    """Every line of ``stream`` an event numbered 1, 2, …, exactly one ``stream.closed``, last; its reason."""
    events = [read_event(line) for line in stream.splitlines()]
    assert events and all(isinstance(event, Success) for event in events), stream[-500:]
    read = [event.unwrap() for event in events]
    assert [event.seq for event in read] == list(range(1, len(read) + 1))
    closed = [index for index, event in enumerate(read) if isinstance(event.payload, StreamClosed)]
    assert closed == [len(read) - 1]
    reason = read[-1].payload.reason
    assert isinstance(reason, str) and reason in CLOSING_REASONS, reason
    return reason


@settings(max_examples=150, deadline=None)
@given(source=st.sampled_from(RECORDS), data=st.data())
def test_a_mutated_record_replays_to_one_closed_stream_that_projects(source: tuple[Kind, str], data: st.DataObject) -> None:
    kind, name = source
    lines = _mutated(list(record_lines(vector_file(kind, name))), data)
    record = b"".join(line + b"\n" for line in lines)
    replayed = replay_whole(kind, record, ReplayRequest(transcript_path="record.jsonl"))
    reason = _assert_one_closed_stream(replayed.stream)
    assert replayed.reason == reason and unaudited_exit(reason) in (0, 3)
    assert isinstance(survey_stream("record.jsonl", replayed.stream.splitlines()), Success)


@settings(max_examples=150, deadline=None)
@given(source=st.sampled_from(STREAMS), data=st.data())
def test_a_mutated_event_stream_projects_or_is_refused_naming_its_line(source: tuple[str, str], data: st.DataObject) -> None:
    kind, name = source
    lines = _mutated(vector_file(kind, name).splitlines(), data)
    surveyed = survey_stream("events.jsonl", lines)
    if isinstance(surveyed, Failure):
        refusal = surveyed.failure()
        assert refusal.code == "projection-unreadable"
        assert refusal.message.startswith("events.jsonl line "), refusal.message
        number = int(refusal.message.removeprefix("events.jsonl line ").partition(":")[0])
        assert 1 <= number <= max(len(lines), 1)
    state = ViewState()
    for item in read_lines(iter(lines)):
        state = fold_view(state, item, 0.0)
    assert view_exit(state) in (0, 1, 3)
