"""``conformance b10x``: load the vectors' data, run each check, drive C3 against a scripted child
(docs/adapters/b10x.md#conformance-vectors)."""

from __future__ import annotations

import os
import sys
import tempfile
from importlib import resources

from returns.result import Failure

from metaharness.pure.b10x.vectors import (
    BANNER_VERSION_FILE,
    VECTORS,
    Vector,
    Verdict,
    c3_settings,
    check_c1,
    check_c2,
    check_c4,
    compare_lines,
)
from metaharness.pure.frames import load_frame
from metaharness.shell.b10x.live import drive_loop
from metaharness.shell.live_engine import StreamLines

SCRIPTED_CHILD = """
import json, sys
record, capture = sys.argv[1], sys.argv[2]
with open(record, "rb") as lines, open(capture, "ab") as seen:
    for line in lines:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
        try:
            kind = json.loads(line).get("kind")
        except ValueError:
            kind = None
        if kind == "approval-required":
            seen.write(sys.stdin.buffer.readline())
            seen.flush()
"""
"""The C3 child: writes the record as its stdout and captures each line it is answered with."""


class VectorUnreadable(Exception):
    """A vector's data file is missing or unreadable (docs/hermetic.md#exit-codes: exit 2)."""


def vector_bytes(name: str) -> bytes:
    """A data file under ``vectors/b10x/``."""
    try:
        return resources.files("metaharness.vectors").joinpath("b10x", name).read_bytes()
    except OSError as error:
        raise VectorUnreadable(f"vectors/b10x/{name} could not be read: {error.strerror or error}") from error


def run_c3(vector: Vector, banner: bytes) -> Verdict:
    """Drive the live run loop against the scripted child and compare stdin and stream byte for byte."""
    assert vector.frame and vector.record and vector.stdin and vector.expected
    loaded = load_frame(vector_bytes(vector.frame))
    if isinstance(loaded, Failure):
        return Verdict(vector, "FAIL", f"the vector's frame does not load: {loaded.failure().message}")
    record, wanted_stdin, expected = vector_bytes(vector.record), vector_bytes(vector.stdin), vector_bytes(vector.expected)
    with tempfile.TemporaryDirectory(prefix="metaharness-c3-") as scratch:
        record_path = os.path.join(scratch, "record.jsonl")
        capture_path = os.path.join(scratch, "stdin")
        with open(record_path, "wb") as handle:
            handle.write(record)
        open(capture_path, "wb").close()
        settings = c3_settings(vector, banner, loaded.unwrap())
        stream = StreamLines(settings.run)
        drive_loop(
            argv=[sys.executable, "-c", SCRIPTED_CHILD, record_path, capture_path],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            cwd=scratch,
            settings=settings,
            opening=lambda settings: (settings, ()),
            write_event=stream.write,
            transcript=None,
            commands=None,
            on_steering_refusal=lambda _line: None,
            process_known=False,
        )
        with open(capture_path, "rb") as handle:
            captured = handle.read()
    stdin_verdict = compare_lines(vector, wanted_stdin, captured, "stdin line")
    if stdin_verdict.outcome != "pass":
        return stdin_verdict
    return compare_lines(vector, expected, bytes(stream.lines))


def run_vector(vector: Vector, banner: bytes) -> Verdict:
    """One vector's verdict."""
    if vector.tier == "C1":
        assert vector.fixture is not None
        frame = vector_bytes(vector.frame) if vector.frame is not None else None
        return check_c1(vector, vector_bytes(vector.fixture), frame)
    if vector.tier == "C2":
        assert vector.record is not None and vector.expected is not None
        return check_c2(vector, vector_bytes(vector.record), vector_bytes(vector.expected), banner)
    if vector.tier == "C3":
        return run_c3(vector, banner)
    return check_c4(vector, banner)


def run_b10x_vectors() -> tuple[Verdict, ...]:
    """Every vector's verdict, in order. Raises :class:`VectorUnreadable`."""
    banner = vector_bytes(BANNER_VERSION_FILE)
    return tuple(run_vector(vector, banner) for vector in VECTORS)
