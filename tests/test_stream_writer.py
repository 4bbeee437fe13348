"""Events are values until the stream's one writer (docs/DEVELOPING.md#the-event-path): the writer numbers every line
it writes, what the amendment adds included, and nothing in the live path parses an event line it made."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from metaharness.pure.events import (
    Deny,
    EventValue,
    Exited,
    Stream,
    StreamClosed,
    ToolDecided,
    ToolResult,
    UnknownProcess,
    closing_marker,
    note,
)
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write, write_line

ROOT = Path(__file__).resolve().parent.parent
LIVE_PATH = (
    "shell/wind_up.py",
    "shell/child_end.py",
    "shell/live_engine.py",
    "shell/codex/app_server.py",
    "pure/stream_amendment.py",
    "pure/stream_writer.py",
    *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "shell").glob("*/live.py")),
)
READERS = {"read_event", "closed_reason", "loads", "decode"}
"""What reads an event line back: the event reader, the closing-reason reader, ``json.loads`` and any ``decode``."""


def _line_reads(path: str, source: str | None = None) -> list[str]:
    """Each place in ``path`` (or ``source``) that calls a line reader or holds an event name's serialised key."""
    found = []
    for node in ast.walk(ast.parse((ROOT / path).read_text() if source is None else source)):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in READERS:
                found.append(f"{path}:{node.lineno}: {name}(…)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, bytes | str):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            if '"event":' in text:
                found.append(f"{path}:{node.lineno}: {text!r}")
    return found


def test_nothing_in_the_live_path_parses_an_event_line_it_made() -> None:
    assert len(LIVE_PATH) >= 10
    assert [place for path in LIVE_PATH for place in _line_reads(path)] == []


def test_the_check_sees_a_read_back_line_and_a_substring_test() -> None:
    """The source check is not vacuous: a writer that reads its line back or searches it is named."""
    source = 'def f(line):\n    return b\'"event":"session.ended"\' in line or read_event(line) or msgspec.json.decode(line)\n'
    assert len(_line_reads("planted.py", source)) == 3


def _result(call_id: str) -> ToolResult:
    return ToolResult(exit_code=None, outcome_source=None, call_id=call_id, is_error=False, content=None, bytes=None,
                      tool_use_result=None)  # fmt: skip


def test_the_writer_numbers_what_the_amendment_adds_and_the_marker_counts_every_line() -> None:
    """Hostile: a forged allow after metaharness's deny and a child that exits 1 after ``completed`` each add a
    line; the session counted neither, yet every line is numbered 1.. without a gap and the marker counts them."""
    session = Stream("r")
    values = []
    decided = ToolDecided(call_id="c1", decision=Deny(reason="no"), decided_by="frame", seam="hook", latency_ms=1)
    for payload in (decided, _result("c1")):
        session, value = note(session, payload)
        values.append(value)
    values.append(EventValue(closing_marker(session, "completed", Exited(code=1)), "2026-12-02T00:00:00Z"))
    writer, lines = StreamWriter(Stream("r"), Amendment()), []
    for value in values:
        writer, written = write(writer, value)
        lines += written
    events = [json.loads(line.encoded) for line in lines]
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5] == [line.line.seq for line in lines]
    assert [e.get("code") for e in events] == [None, None, "DECISION_BYPASSED", "RUN_FAILED", None]
    assert (events[-1]["events"], events[-1]["reason"], events[-1]["at"]) == (4, "error", "2026-12-02T00:00:00Z")
    assert writer.stream.written == 5 and all(line.encoded.endswith(b"\n") for line in lines)


def test_a_marker_noted_against_the_written_stream_follows_on_from_every_line() -> None:
    """``internal-error``'s closing marker (``metaharness.shell.child_end``) is numbered after what was written."""
    writer = StreamWriter(Stream("r", written=7), Amendment())
    _, (line,) = write(writer, EventValue(closing_marker(writer.stream, "error", UnknownProcess())))
    assert (line.line.seq, json.loads(line.encoded)["events"]) == (8, 7)
    assert isinstance(line.line.payload, StreamClosed)


def test_with_nothing_to_amend_the_writer_writes_the_value_as_it_is() -> None:
    stream, line = write_line(Stream("r", written=2), EventValue(_result("c1"), "t"))
    assert stream.written == 3 and json.loads(line)["seq"] == 3 and json.loads(line)["at"] == "t"
    assert not stream.unended
