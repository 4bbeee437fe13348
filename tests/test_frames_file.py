"""``--frame FILE`` against real files, and its refusal line from the real CLI
(docs/frames.md#3-what-a-run-does-with-it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.frames import frame_skeleton
from returns.result import Failure, Success

from metaharness.pure.frames import frame_document, seal_frame
from metaharness.shell.frame_file import read_frame_file

DOCUMENT = frame_skeleton("development/default", "implement", "implement", 3, operations=[{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}], subjects=[{"subject": "**", "operations": [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]}])


def test_a_sealed_pretty_printed_frame_loads(tmp_path: Path) -> None:
    sealed = seal_frame(DOCUMENT).unwrap()
    path = tmp_path / "step.frame.json"
    path.write_text(json.dumps(json.loads(frame_document(sealed)), indent=2))
    assert read_frame_file(str(path)) == Success(sealed)


def test_a_missing_file_is_unreadable(tmp_path: Path) -> None:
    path = str(tmp_path / "absent.json")
    refusal = read_frame_file(path).failure()
    assert refusal.code == "frame-unreadable"
    assert refusal.message == f"frame {path}: could not be read: No such file or directory"


def test_a_directory_is_unreadable(tmp_path: Path) -> None:
    refusal = read_frame_file(str(tmp_path)).failure()
    assert refusal.code == "frame-unreadable"
    assert refusal.message == f"frame {tmp_path}: could not be read: not a regular file"


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "frame.fifo"
    os.mkfifo(fifo)
    assert read_frame_file(str(fifo)).failure().code == "frame-unreadable"


def test_an_edited_frame_is_invalid_with_the_path_prefix(tmp_path: Path) -> None:
    sealed = json.loads(frame_document(seal_frame(DOCUMENT).unwrap()))
    sealed["node"]["id"] = "verify"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(sealed))
    refusal = read_frame_file(str(path))
    assert isinstance(refusal, Failure)
    assert refusal.failure().code == "frame-invalid"
    assert refusal.failure().message.startswith(f"frame {path}: the stated digest {sealed['digest']} does not describe")


def test_the_cli_prints_one_refusal_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + frame_document(seal_frame(DOCUMENT).unwrap()))
    done = subprocess.run(
        [sys.executable, "-m", "metaharness.shell", "replay", "b10x", str(tmp_path / "record.jsonl"),
         "--decisions", "frame", "--frame", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"metaharness: frame-invalid: frame {path}: not a JSON object: ")
    assert done.stderr.count("\n") == 1
