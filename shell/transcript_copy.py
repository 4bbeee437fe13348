"""The retained transcript of a run whose record is its child's stdout (claude, b10x): every line written
whole as it is read, and a write that fails (a full disk, ``ENOSPC``; a file-size limit, ``EFBIG``) a
named outcome, never an exception (docs/cli.md#keeping-the-stream).

On the first failed write the copy stops: what it holds is the record up to that line, the run goes on
reading the child's stdout live, the stream gets ``TRANSCRIPT_INCOMPLETE`` among the wind-up's events, and
the run ends with the refusal ``transcript-write-failed``, since no auditor and no ``--retain-dir`` can be
handed the whole record.
"""

from __future__ import annotations

import io
import os

from metaharness.pure.events import WarningRaised
from metaharness.pure.refusal import Refusal


class TranscriptCopy(io.FileIO):
    """The transcript file opened for writing (created or truncated, never through a link); ``error``
    names the first failed write and ``lines`` counts the lines kept before it."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "wb", opener=lambda name, flags: os.open(name, flags | os.O_NOFOLLOW, 0o600))
        self.path = path
        self.lines = 0
        self.error: str | None = None

    def write(self, data: bytes | bytearray | memoryview, /) -> int:  # type: ignore[override]
        """``data`` written whole (a short write continued), or nothing once a write has failed."""
        if self.error is not None:
            return len(data)
        view = memoryview(data)
        try:
            while view:
                view = view[super().write(view) or 0 :]
        except OSError as error:
            self.error = error.strerror or str(error)
            return len(data)
        self.lines += bytes(data).count(b"\n")
        return len(data)

    def late_events(self) -> tuple[WarningRaised, ...]:
        """``TRANSCRIPT_INCOMPLETE`` once a write failed, for the wind-up's events."""
        if self.error is None:
            return ()
        return (
            WarningRaised(
                code="TRANSCRIPT_INCOMPLETE",
                message=f"the transcript {self.path} holds only the first {self.lines} complete line(s) of the record: "
                f"a write failed ({self.error}), so the lines after them were read but not kept",
            ),
        )

    def refusal(self) -> Refusal | None:
        """``transcript-write-failed`` once a write failed."""
        if self.error is None:
            return None
        return Refusal(
            "transcript-write-failed",
            f"the transcript {self.path} could not be written past line {self.lines}: {self.error}; "
            "the stream is whole, the kept record is not",
        )
