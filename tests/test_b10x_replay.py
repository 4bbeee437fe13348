"""``metaharness replay b10x`` end to end: the CLI maps records into well-formed streams (docs/events.md#replay)."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
from pathlib import Path

import pytest
from shared_tree import ABSENT, SHARED

from metaharness.pure.events import read_event

PEER = SHARED / "peer-records" / "b10x-harness-0.9.1"
METAHARNESS = [sys.executable, "-m", "metaharness.shell"]


def replay(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*METAHARNESS, "replay", "b10x", *args], check=False, capture_output=True, timeout=60)


def assert_well_formed(stream: bytes) -> list[dict]:
    lines = stream.splitlines()
    parsed = [read_event(line).unwrap() for line in lines]
    assert [line.seq for line in parsed] == list(range(1, len(lines) + 1))
    closed = [line for line in parsed if line.payload.__struct_config__.tag == "stream.closed"]
    assert len(closed) == 1 and closed[0] is parsed[-1] and closed[0].payload.events == len(lines) - 1
    return [json.loads(line) for line in lines]


@pytest.mark.skipif(not PEER.is_dir(), reason=ABSENT)
@pytest.mark.parametrize(
    ("name", "exit_code", "reason"),
    [
        ("golden-loop.jsonl", 0, "completed"),
        ("approval-denied.jsonl", 3, "error"),
        ("budget-stop.jsonl", 3, "budget"),
        ("cancelled.jsonl", 3, "error"),
        ("unpublished.jsonl", 3, "error"),
    ],
)
def test_reference_loop_records_replay_into_well_formed_streams(name: str, exit_code: int, reason: str) -> None:
    done = replay(str(PEER / name), "--harness-version", "0.9.1")
    assert done.returncode == exit_code, done.stderr
    events = assert_well_formed(done.stdout)
    assert events[-1]["reason"] == reason
    assert not [e for e in events if e["event"] == "tool.decided"]


@pytest.mark.skipif(not PEER.is_dir(), reason=ABSENT)
def test_reference_golden_record_reads_its_older_started() -> None:
    events = assert_well_formed(replay(str(PEER / "golden-loop.jsonl"), "--run", "r1", "--model", "m").stdout)
    started = events[0]
    assert started["event"] == "session.started" and started["cwd"] is None and started["run"] == "r1"
    assert started["available_operations"] == ["file.read", "dir.list", "search", "find"]
    assert started["transcript"] == {"path": str(PEER / "golden-loop.jsonl"), "digest": None, "bytes": None}


def test_frame_replay_writes_answers(tmp_path: Path) -> None:
    record = tmp_path / "loop.jsonl"
    record.write_bytes(
        b'{"kind":"tool-requested","call_id":"c1","name":"file_write","arguments":{"path":"note.md","text":"x"}}\n'
        b'{"kind":"approval-required","call_id":"c1","name":"file_write"}\n'
        b'{"kind":"approval-resolved","call_id":"c1","approved":false}\n'
        b'{"kind":"tool-completed","call_id":"c1","failed":true}\n'
        b'{"kind":"finished","stop":{"kind":"completed"},"turns":1}\n'
    )
    frame = tmp_path / "frame.json"
    from metaharness.pure.frames import frame_document, seal_frame

    raw = {
        "workflow": {"id": "w", "version": "1"}, "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [], "obligations": [], "reaching": [], "next": [], "handoff": {"handoff": "none"},
        "operations": [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}],
    }
    frame.write_bytes(frame_document(seal_frame(raw).unwrap()))
    answers = tmp_path / "answers"
    done = replay(str(record), "--decisions", "frame", "--frame", str(frame), "--answers", str(answers))
    assert done.returncode == 0, done.stderr
    events = assert_well_formed(done.stdout)
    decided = next(e for e in events if e["event"] == "tool.decided")
    assert decided["decided_by"] == "frame" and decided["decision"]["decision"] == "deny"
    assert answers.read_bytes().startswith(b'{"call_id":"c1","decision":"deny","reason":"this step admits [')
    assert events[0]["event"] == "tool.requested" and events[0]["seam"] == "control_request"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["/nonexistent/record"], "record-unreadable"),
        (["r", "--decisions", "frame"], "frame-required"),
        (["r", "--frame", "f.json"], "observe-with-frame"),
        (["r", "--decisions", "frame", "--frame", "/nonexistent/f.json"], "frame-unreadable"),
        (["r", "--decisions", "ask"], "usage"),
    ],
)
def test_replay_refusals(args: list[str], code: str) -> None:
    done = replay(*args)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith(f"metaharness: {code}: ")


def test_inadmissible_frame_refused(tmp_path: Path) -> None:
    from metaharness.pure.frames import frame_document, seal_frame

    raw = {
        "workflow": {"id": "w", "version": "1"}, "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
        "prior": [], "obligations": [], "reaching": [], "next": [], "handoff": {"handoff": "none"},
        "operations": [{"op": "file.write"}],
    }
    frame = tmp_path / "f.json"
    frame.write_bytes(frame_document(seal_frame(raw).unwrap()))
    done = replay("r", "--decisions", "frame", "--frame", str(frame))
    assert done.returncode == 2 and b"frame-inadmissible: the frame " in done.stderr


GOLDEN = Path(__file__).resolve().parent.parent / "vectors" / "b10x" / "golden" / "loop.jsonl"


def test_replay_writes_an_event_before_the_record_is_read_to_its_end() -> None:
    """Replay streams (docs/events.md#replay): fed through a pipe, the opening event arrives while the
    writer still holds the rest of the record, and the whole stream matches the file's replay."""
    lines = GOLDEN.read_bytes().splitlines(keepends=True)
    child = subprocess.Popen([*METAHARNESS, "replay", "b10x", "/dev/stdin", "--transcript-path", str(GOLDEN)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        child.stdin.write(lines[0])
        child.stdin.flush()
        with selectors.DefaultSelector() as watching:  # not select(): a worker's descriptors may lie past FD_SETSIZE
            watching.register(child.stdout, selectors.EVENT_READ)
            assert watching.select(30), "no event while the record was still being written"
        first = child.stdout.readline()
        assert json.loads(first)["event"] == "session.started"
        assert child.poll() is None
        child.stdin.writelines(lines[1:])
        child.stdin.close()
        rest = child.stdout.read()
    finally:
        child.kill() if child.poll() is None else None
        child.wait(timeout=30)
    whole = replay(str(GOLDEN))
    assert first + rest == whole.stdout and child.returncode == whole.returncode


def test_replay_reads_a_line_past_the_bound_as_opaque_and_an_unterminated_last_line(tmp_path: Path) -> None:
    """The record is read in chunks (docs/events.md#replay): a line longer than the record-line bound keeps only
    its first bytes, so it reads as ``opaque`` at its own line number, lines split across reads are whole, and
    a last line without ``\\n`` is still read."""
    from metaharness.pure.bounds import RECORD_LINE_LIMIT

    lines = GOLDEN.read_bytes().splitlines()
    huge = b'{"kind":"text-delta","text":"' + b"y" * (RECORD_LINE_LIMIT + 70000) + b'"}'
    record = tmp_path / "huge.jsonl"
    record.write_bytes(b"\n".join([lines[0], huge, *lines[1:]]))
    done = replay(str(record))
    assert done.returncode == 0, done.stderr
    events = assert_well_formed(done.stdout)
    assert [e["source_line"] for e in events if e["event"] == "opaque"] == [2]
    assert events[-1]["reason"] == "completed" and events[-2]["event"] == "session.ended"


def test_a_reader_that_closes_stdout_stops_the_replay_with_stdout_closed(tmp_path: Path) -> None:
    """``replay … | head -1`` (docs/cli.md#replay): the lost reader is named ``stdout-closed``, not blamed on
    the record, and nothing is printed past the refusal."""
    lines = GOLDEN.read_bytes().splitlines(keepends=True)
    record = tmp_path / "long.jsonl"
    record.write_bytes(b"".join([lines[0], *lines[1:-1] * 2000, lines[-1]]))
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first event
    try:
        done = subprocess.run([*METAHARNESS, "replay", "b10x", str(record)], stdout=write, stderr=subprocess.PIPE,
                              check=False, timeout=60)  # fmt: skip
    finally:
        os.close(write)
    assert done.returncode == 2
    assert done.stderr.decode() == ("metaharness: stdout-closed: the event stream's reader closed stdout after 0 line(s), "
                                    "so the replay stopped and the rest of the stream was lost\n")
    assert b"record-unreadable" not in done.stderr and b"Traceback" not in done.stderr and b"Exception" not in done.stderr


def test_replay_never_writes_its_answers_through_a_link_a_child_planted(tmp_path: Path) -> None:
    """Hostile: ``--answers`` names a link a child planted to a file of the operator's: ``answers-unwritable``
    (exit 2), and the file keeps its bytes."""
    record = tmp_path / "loop.jsonl"
    record.write_bytes(b'{"kind":"finished","stop":{"kind":"completed"},"turns":1}\n')
    profile = tmp_path / "profile"
    profile.write_text("the operator's\n")
    (tmp_path / "answers").symlink_to(profile)
    done = replay(str(record), "--answers", str(tmp_path / "answers"))
    assert done.returncode == 2 and b"answers-unwritable" in done.stderr and b"symbolic link" in done.stderr
    assert profile.read_text() == "the operator's\n"
