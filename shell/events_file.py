"""``run --events FILE`` (docs/cli.md#keeping-the-stream): the whole stream written to FILE by
metaharness itself, whatever happens to stdout.

FILE is created new (``O_EXCL``, never through a link, mode 0600) once stages 5–7 passed, before any proxy
or child starts, and every line is written to its descriptor whole before it is offered to stdout, so a
reader that goes away (a closed pipe, a Ctrl-C that ended the view first) costs stdout the rest of the
stream and FILE nothing: it still ends with the closing ``stream.closed``. The descriptor is held for the run, so a
name the child could later replace is never opened again.
"""

from __future__ import annotations

import os

from metaharness.pure.refusal import Refusal

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class EventsFile:
    """One run's ``--events`` descriptor; ``error`` names the first failed write, after which the file is
    closed and the run goes on (it ends with the refusal ``events-write-failed``)."""

    def __init__(self, descriptor: int, path: str) -> None:
        self.descriptor = descriptor
        self.path = path
        self.error: str | None = None

    def write(self, line: bytes) -> None:
        """``line`` written whole (a short write continued), or the file given up on its first error."""
        if self.descriptor < 0:
            return
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(self.descriptor, view) :]
        except OSError as error:
            self.error = error.strerror or str(error)
            self.close()

    def close(self) -> None:
        """Close the descriptor once."""
        if self.descriptor >= 0:
            os.close(self.descriptor)
            self.descriptor = -1

    def refusal(self) -> Refusal | None:
        """``events-write-failed`` once a write failed."""
        if self.error is None:
            return None
        return Refusal("events-write-failed", f"--events {self.path}: a line could not be written: {self.error}")


def open_events_file(path: str) -> EventsFile | Refusal:
    """FILE created new for the run's stream, or ``events-file-unusable`` naming why it cannot be (it
    exists, is a link, its directory is missing or not writable)."""
    try:
        return EventsFile(os.open(path, _FLAGS, 0o600), path)
    except OSError as error:
        return Refusal(
            "events-file-unusable",
            f"--events {path} cannot be created new: {error.strerror or error} (the file must not exist yet)",
        )
