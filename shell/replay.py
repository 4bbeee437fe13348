"""``metaharness replay <KIND> <RECORD>``: a retained vendor record mapped offline (docs/events.md#replay).

One path for every kind: the frame is loaded and refused as on ``run`` (``frame-required`` on b10x,
``observe-with-frame``, the frame file's refusals, b10x's ``frame-inadmissible``), the record is opened
(``record-unreadable``) and so is ``--answers`` (``answers-unwritable``), then the kind's pure replay
reads the record line by line and each event goes to stdout as soon as the line that makes it is read:
memory stays flat in the record's length (docs/events.md#replay). Replay arms no deadline and starts nothing.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator
from typing import IO

from returns.result import Failure

from metaharness.pure.adapter import Adapter, ReplayOutput, ReplayRequest
from metaharness.pure.adapters import adapter_of
from metaharness.pure.bounds import RECORD_LINE_LIMIT
from metaharness.pure.events import closed_reason
from metaharness.pure.frames import Frame, refuse_frame_beside_observe
from metaharness.pure.kind import Kind
from metaharness.pure.modes import DecisionMode, HermeticMode
from metaharness.pure.refusal import Refusal, not_utf8
from metaharness.pure.replays import replay_of
from metaharness.pure.run_limits import stdout_closed
from metaharness.pure.run_stages import unaudited_exit
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.output_file import open_output
from metaharness.shell.refusals import refuse


def _frame(adapter: Adapter, decisions: str, frame: str | None) -> Frame | None | Refusal:
    """The loaded frame (``None`` without ``--frame``), or the first refusal in ``run``'s order."""
    required = adapter.run_rules.frame_required
    if required is not None and decisions == "frame" and frame is None:
        return Refusal("frame-required", required)
    beside = refuse_frame_beside_observe(decisions, frame)
    if isinstance(beside, Failure):
        refusal: Refusal = beside.failure()
        return refusal
    if frame is None:
        return None
    loaded = read_frame_file(frame)
    if adapter.admit_frame is not None:
        loaded = loaded.bind(adapter.admit_frame)
    return loaded.failure() if isinstance(loaded, Failure) else loaded.unwrap()


def run_replay(
    *,
    kind: Kind,
    record: str,
    run_id: str,
    decisions: DecisionMode,
    frame: str | None,
    hermetic: HermeticMode,
    harness_version: str | None,
    model: str | None,
    transcript_path: str | None,
    answers: str | None,
) -> int:
    """Map ``record`` of ``kind`` into ``metaharness.event/1`` on stdout with the options of
    docs/events.md#replay; exit 0 when the stream closed ``completed``, else 3."""
    words = not_utf8((("--run", run_id), ("--model", model), ("--harness-version", harness_version),
                      ("--transcript-path", transcript_path),
                      ("RECORD's path (give --transcript-path)", record if transcript_path is None else None)))  # fmt: skip
    if words is not None:
        return refuse(words)
    adapter = adapter_of(kind)
    loaded = _frame(adapter, decisions, frame)
    if isinstance(loaded, Refusal):
        return refuse(loaded)
    with contextlib.ExitStack() as held:
        try:
            handle = held.enter_context(open(record, "rb"))
        except OSError as error:
            return refuse(_unreadable(record, error))
        sink = _answers_sink(answers if adapter.caller_seam else None)
        if isinstance(sink, Refusal):
            return refuse(sink)
        if sink is not None:
            held.enter_context(sink)
        path = transcript_path if transcript_path is not None else record
        request = ReplayRequest(run_id=run_id, decisions=decisions, frame=loaded, hermetic=hermetic,
                                harness_version=harness_version, model=model, transcript_path=path)  # fmt: skip
        out = _Batch()
        try:
            last = _stream(replay_of(kind)(_record_lines(handle, out.flush), request), sink, out)
        except _StdoutClosed:
            return refuse(stdout_closed(out.written, "the replay stopped"))
        except OSError as error:
            return refuse(_unreadable(record, error))
    return unaudited_exit(closed_reason(last))


def _unreadable(record: str, error: OSError) -> Refusal:
    return Refusal("record-unreadable", f"{record} could not be read: {error.strerror or error}")


def _answers_sink(answers: str | None) -> IO[bytes] | Refusal | None:
    """``--answers FILE`` opened before the first event is written, or ``answers-unwritable``."""
    if answers is None:
        return None
    try:
        return open_output(answers)
    except OSError as error:
        return Refusal("answers-unwritable", f"--answers {answers} could not be written: {error.strerror or error}")


_CHUNK = 65536
"""Bytes of the record read at once; the events its lines made are written before the next read."""


class _StdoutClosed(Exception):
    """The event stream's reader went away (``replay … | head``): the replay stops with ``stdout-closed``."""


class _Batch:
    """The event lines made since the last read of the record, written to stdout in one write before the
    next read (so an event never waits on the record's writer) and at the end; ``written`` counts the lines
    that reached stdout."""

    def __init__(self) -> None:
        self.lines = bytearray()
        self.written = 0

    def flush(self) -> None:
        if self.lines:
            try:
                sys.stdout.buffer.write(self.lines)
                sys.stdout.buffer.flush()
            except BrokenPipeError:
                _drop_stdout()
                raise _StdoutClosed from None
            self.written += self.lines.count(b"\n")
            self.lines.clear()


def _drop_stdout() -> None:
    """Point stdout at ``/dev/null`` so the interpreter's last flush does not fail on the lost pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def _record_lines(handle: io.BufferedReader, before_read: Callable[[], None]) -> Iterator[bytes]:
    """The record's lines, each without its ``\n`` and cut to the record-line bound, read in chunks as the
    replay pulls them; ``before_read`` runs before each read."""
    limit = RECORD_LINE_LIMIT
    pending = bytearray()
    while True:
        before_read()
        chunk = handle.read1(_CHUNK)
        if not chunk:
            break
        lines = chunk.split(b"\n")
        last = lines.pop()
        if pending and lines:
            pending += lines[0][: limit - len(pending)]
            lines[0] = bytes(pending)
            pending.clear()
        for line in lines:
            yield line if len(line) <= limit else line[:limit]
        if len(pending) < limit:
            pending += last[: limit - len(pending)]
    if pending:
        yield bytes(pending)


def _stream(outputs: Iterator[ReplayOutput], sink: IO[bytes] | None, batch: _Batch) -> bytes:
    """Each event line into ``batch`` as it is made, each seam answer to ``sink``; the last event line."""
    last = b""
    lines = batch.lines
    for output in outputs:
        if isinstance(output, bytes):
            lines += output
            last = output
        elif sink is not None:
            sink.write(output.line)
    batch.flush()
    return last
