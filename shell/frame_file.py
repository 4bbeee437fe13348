"""Reading a ``--frame FILE`` (docs/frames.md#3-what-a-run-does-with-it check 1), then the pure checks 2–7."""

from __future__ import annotations

from returns.result import Failure, Result, Success

from metaharness.pure.bounds import FRAME_FILE_LIMIT
from metaharness.pure.frames import Frame, frame_refusal, load_frame
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import read_regular


def read_frame_file(path: str) -> Result[Frame, Refusal]:
    """The frame in ``path``: ``frame-unreadable`` when it is not a readable regular file, ``frame-invalid``
    for checks 2–7, each message ``frame <path>: <message>`` (docs/frames.md#3-what-a-run-does-with-it)."""
    try:
        data = read_regular(path, FRAME_FILE_LIMIT)
    except OSError as error:
        return Failure(Refusal("frame-unreadable", f"frame {path}: could not be read: {error.strerror or error}"))
    frame = load_frame(data)
    if isinstance(frame, Failure):
        return Failure(frame_refusal(path, frame.failure()))
    return Success(frame.unwrap())
