"""Reading a ``--frame FILE`` (spec 20 §6.3 check 1), then the pure checks 2–7."""

from __future__ import annotations

import os
import stat

from returns.result import Failure, Result, Success

from metaharness.pure.frames import Frame, frame_refusal, load_frame
from metaharness.pure.refusal import Refusal


def _read_regular_file(path: str) -> bytes:
    """The bytes of ``path``, which must be a regular file; opened without blocking, so a FIFO named as
    a frame is refused rather than waited on."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError("not a regular file")
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(descriptor)


def read_frame_file(path: str) -> Result[Frame, Refusal]:
    """The frame in ``path``: ``frame-unreadable`` when it is not a readable regular file, ``frame-invalid``
    for checks 2–7, each message ``frame <path>: <message>`` (spec 20 §6.3)."""
    try:
        data = _read_regular_file(path)
    except OSError as error:
        return Failure(Refusal("frame-unreadable", f"frame {path}: could not be read: {error.strerror or error}"))
    frame = load_frame(data)
    if isinstance(frame, Failure):
        return Failure(frame_refusal(path, frame.failure()))
    return Success(frame.unwrap())
