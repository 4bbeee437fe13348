"""``metaharness replay claude RECORD`` end to end (docs/events.md#replay,
docs/adapters/common.md#one-event-per-call)."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from pathlib import Path

from metaharness.shell.vendor_vectors import vector_file

vector_bytes = partial(vector_file, "claude")


def replay(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "metaharness.shell", "replay", "claude", *args], capture_output=True, cwd=cwd, check=False
    )


def test_a_retained_transcript_replays_byte_for_byte(tmp_path: Path) -> None:
    (tmp_path / "record").mkdir()
    (tmp_path / "record" / "write.jsonl").write_bytes(vector_bytes("record/write.jsonl"))
    done = replay("record/write.jsonl", "--run", "golden", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == vector_bytes("record/write.expected.jsonl")


def test_options_reach_the_stream(tmp_path: Path) -> None:
    record = tmp_path / "t.jsonl"
    record.write_bytes(vector_bytes("record/bash.jsonl"))
    frame = tmp_path / "frame.json"
    frame.write_bytes(vector_bytes("hook/frame-deny.json"))
    done = replay(str(record), "--decisions", "frame", "--frame", str(frame), "--hermetic", "strict",
                  "--transcript-path", "kept/t.jsonl")  # fmt: skip
    events = [json.loads(line) for line in done.stdout.splitlines()]
    started = events[0]
    assert started["transcript"] == {"path": "kept/t.jsonl", "digest": None, "bytes": None}
    assert (started["hermetic"]["mode"], started["hermetic"]["decisions"]) == ("strict", "frame")
    assert all(e["run"] == "replay" for e in events)
    assert not any(e["event"] == "tool.decided" for e in events)
    assert [e["seam"] for e in events if e["event"] == "tool.requested"] == ["none"]


def test_a_record_without_a_terminal_record_exits_3(tmp_path: Path) -> None:
    record = tmp_path / "cut.jsonl"
    record.write_bytes(b"".join(vector_bytes("record/bash.jsonl").splitlines(keepends=True)[:2]))
    done = replay(str(record))
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 3
    assert events[-1]["event"] == "stream.closed" and events[-1]["reason"] == "error"


def test_refusals(tmp_path: Path) -> None:
    missing = replay(str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and missing.stdout == b""
    assert missing.stderr.startswith(b"metaharness: record-unreadable: ")
    frame = tmp_path / "frame.json"
    frame.write_bytes(vector_bytes("hook/frame-deny.json"))
    beside = replay(str(tmp_path / "nope.jsonl"), "--frame", str(frame))
    assert beside.stderr.startswith(b"metaharness: observe-with-frame: ")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    invalid = replay(str(tmp_path / "nope.jsonl"), "--decisions", "frame", "--frame", str(broken))
    assert invalid.stderr.startswith(b"metaharness: frame-invalid: ")


def test_project_from_claude_maps_the_record_as_replay_does(tmp_path: Path) -> None:
    record = tmp_path / "write.jsonl"
    record.write_bytes(vector_bytes("record/write.jsonl"))
    done = subprocess.run([sys.executable, "-m", "metaharness.shell", "project", str(record), "--from", "claude"],
                          capture_output=True, check=False)  # fmt: skip
    document = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert document["metaharness"]["source"] == "claude.stream-json"
    assert document["metaharness"]["stream_complete"] == "complete"
    assert [node["family"] for node in document["nodes"]][:2] == ["session_start", "tool_call"]
    replayed = replay(str(record)).stdout.splitlines()
    assert len(document["nodes"]) == len(replayed)
