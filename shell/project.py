"""``metaharness project``: read the event files, write the trace-ir/1 document and the page
(docs/cli.md#project). The projection itself is ``metaharness.pure.projection``.

Two passes, so memory stays flat in the input's length and a refusal writes nothing: the first reads the
input once, digesting and reading every line (under ``--from KIND`` mapping the record as ``replay`` does)
while it copies the stream into a sealed memory file no other process can name or change; the second
writes the document from that copy as it maps each line (docs/cli.md#project).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import IO, NamedTuple

from returns.result import Failure

from metaharness.pure.adapter import ReplayRequest, SeamAnswer
from metaharness.pure.adapters import adapter_of
from metaharness.pure.bounds import INPUT_FILE_LIMIT
from metaharness.pure.kind import Kind
from metaharness.pure.projection import (
    EVENT_SOURCE,
    TRACE_FORMAT,
    TraceDocument,
    TraceHead,
    check_projection_request,
    document_foot,
    document_head,
    node_piece,
    stream_lines,
    survey_stream,
    trace_nodes,
)
from metaharness.pure.refusal import Refusal, not_utf8
from metaharness.pure.replays import replay_of
from metaharness.pure.run_page import audited_lines, run_page
from metaharness.shell.bounded_reads import InputTooLarge, read_bounded
from metaharness.shell.output_file import open_output
from metaharness.shell.refusals import refuse

_CHUNK = 65536
"""Bytes read at once, and the document's bytes gathered before each write."""


def _unwritable(path: str, error: OSError) -> Refusal:
    return Refusal("projection-unwritable", f"{path}: cannot be written: {error.strerror or error}")


def _unreadable(path: str, error: OSError) -> Refusal:
    return Refusal("projection-unreadable", f"{path}: cannot be read: {error.strerror or error}")


def _write(path: str, text: str) -> Refusal | None:
    try:
        with open_output(path) as handle:
            handle.write(text.encode("utf-8"))
    except OSError as error:
        return _unwritable(path, error)
    return None


def _read(path: str) -> bytes | Refusal:
    try:
        with open(path, "rb") as handle:
            return read_bounded(handle, INPUT_FILE_LIMIT)
    except OSError as error:
        return _unreadable(path, error)


class CopyFailed(Exception):
    """Writing the scratch copy failed (the temporary directory's disk is full): the error it raised."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.error = error


class ScratchCopy:
    """A stream's private copy: a memory file with no name in any directory (``memfd_create``), written by the
    first pass, then sealed against every write, growth and shrinking (a seal nobody can lift, even through
    ``/proc/<pid>/fd``) and read back to check it holds exactly what was written."""

    def __init__(self) -> None:
        fd = os.memfd_create("metaharness-project", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        self.file = os.fdopen(fd, "w+b")
        self.digest = hashlib.sha256()

    def copied(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """``chunks`` passed on, each written to the copy first."""
        for chunk in chunks:
            try:
                self.file.write(chunk)
            except OSError as error:
                raise CopyFailed(error) from error
            self.digest.update(chunk)
            yield chunk

    def sealed(self, path: str) -> Refusal | None:
        """Seal the copy, then read it back: ``scratch-copy-changed`` unless it holds what was written."""
        try:
            self.file.flush()
            fcntl.fcntl(self.file.fileno(), fcntl.F_ADD_SEALS, _SEALS)
        except OSError as error:
            return Refusal("scratch-copy-changed", f"{path}: the scratch copy of its stream could not be sealed: "
                                                   f"{error.strerror or error}")  # fmt: skip
        digest = hashlib.sha256()
        for chunk in self.chunks():
            digest.update(chunk)
        if digest.digest() != self.digest.digest():
            return Refusal("scratch-copy-changed", f"{path}: the scratch copy of its stream was written by another "
                                                   "process before it was sealed")  # fmt: skip
        return None

    def chunks(self) -> Iterator[bytes]:
        """The copy's bytes from its start."""
        self.file.seek(0)
        return iter(partial(self.file.read, _CHUNK), b"")


_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


class _Projected(NamedTuple):
    """One input after the first pass: what it learned, the input's digest, the stream's sealed copy."""

    head: TraceHead
    digest: str
    copy: ScratchCopy


def bounded_chunks(handle: IO[bytes]) -> Iterator[bytes]:
    """``handle``'s bytes in chunks; past ``INPUT_FILE_LIMIT`` bytes :class:`InputTooLarge`, nothing past it read."""
    size = 0
    while chunk := handle.read(_CHUNK):
        size += len(chunk)
        if size > INPUT_FILE_LIMIT:
            raise InputTooLarge(f"larger than {INPUT_FILE_LIMIT} bytes")
        yield chunk


def _digested(chunks: Iterable[bytes], digest: hashlib._Hash) -> Iterator[bytes]:
    for chunk in chunks:
        digest.update(chunk)
        yield chunk


def mapped_record(source: Kind, path: str, chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The record's event lines as ``replay`` maps it with its defaults (docs/events.md#replay)."""
    for output in replay_of(source)(stream_lines(chunks), ReplayRequest(transcript_path=path)):
        if not isinstance(output, SeamAnswer):
            yield output


def _first_pass(path: str, source: Kind | None, held: contextlib.ExitStack) -> _Projected | Refusal:
    """Read ``path`` once: its digest, every line read (``--from``: mapped first) and copied into a
    :class:`ScratchCopy`, sealed at the end; the first refusal in the order of docs/cli.md#project (the
    input's bound before its lines, its lines before the copy's check)."""
    digest = hashlib.sha256()
    words = None if source is None else not_utf8(((f"--from {source}'s record path", path),))
    if words is not None:
        return words
    try:
        handle = held.enter_context(open(path, "rb"))  # noqa: SIM115 - held by the stack
    except OSError as error:
        return _unreadable(path, error)
    scratch = f"a scratch copy of {path}"
    try:
        copy = ScratchCopy()
    except OSError as error:
        return _unwritable(scratch, error)
    held.callback(copy.file.close)
    chunks = _digested(bounded_chunks(handle), digest)
    stream = chunks if source is None else mapped_record(source, path, chunks)
    label = EVENT_SOURCE if source is None else adapter_of(source).record_source
    try:
        surveyed = survey_stream(path, stream_lines(copy.copied(stream)), source=label)
        for _ in chunks:
            pass
    except CopyFailed as failed:
        return _unwritable(scratch, failed.error)
    except OSError as error:
        return _unreadable(path, error)
    if isinstance(surveyed, Failure):
        refusal: Refusal = surveyed.failure()
        return refusal
    changed = copy.sealed(path)
    if changed is not None:
        return changed
    return _Projected(surveyed.unwrap(), digest.hexdigest(), copy)


def _lines(projected: _Projected) -> Iterator[bytes]:
    return stream_lines(projected.copy.chunks())


def _write_document(projected: _Projected, sink: IO[bytes]) -> None:
    """The second pass: the document written to ``sink`` as each line of the copy is mapped to its node."""
    pending = bytearray(document_head(projected.head, projected.digest))
    for index, node in enumerate(trace_nodes(_lines(projected))):
        pending += node_piece(node, first=index == 0)
        if len(pending) >= _CHUNK:
            sink.write(pending)
            pending.clear()
    pending += document_foot(projected.head)
    sink.write(pending)


def _document(projected: _Projected) -> TraceDocument:
    """The whole document, for the page (which is not written in one pass: docs/cli.md#project)."""
    return TraceDocument(format=TRACE_FORMAT, run=projected.head.run, transcript_digest=projected.digest,
                         nodes=tuple(trace_nodes(_lines(projected))), metaharness=projected.head.summary)  # fmt: skip


def _write_stdout(projected: _Projected) -> Refusal | None:
    """The document on stdout, or ``stdout-closed`` when its reader went away (``project … | head``): the rest
    is not written, and stdout is pointed at ``/dev/null`` so the interpreter's last flush does not fail."""
    try:
        _write_document(projected, sys.stdout.buffer)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
        return Refusal(
            "stdout-closed",
            "the document's reader closed stdout before the document's end, so the projection stopped and the rest "
            "of the document was lost",
        )
    return None


def _write_out(path: str, projected: _Projected) -> Refusal | None:
    try:
        with open_output(path) as handle:
            _write_document(projected, handle)
    except OSError as error:
        return _unwritable(path, error)
    return None


def run_project(
    inputs: Sequence[str], *, target: str, out: str | None, html: str | None, source: Kind | None,
    reports: Sequence[str] = (),
) -> int:
    """Project ``inputs`` (one or two event files) by docs/cli.md#project, the i-th ``reports`` file (a run's
    stderr) giving the i-th run's audited lines on the page; exit 0 when written, else 2."""
    checked = check_projection_request(
        len(inputs), target=target, out=out, html_out=html, source=source, reports=len(reports)
    )
    if isinstance(checked, Failure):
        return refuse(checked.failure())
    with contextlib.ExitStack() as held:
        projected: list[_Projected] = []
        for path in inputs:
            passed = _first_pass(path, source, held)
            if isinstance(passed, Refusal):
                return refuse(passed)
            projected.append(passed)
        audits: list[tuple[str, ...]] = []
        for path in reports:
            report = _read(path)
            if isinstance(report, Refusal):
                return refuse(report)
            audits.append(audited_lines(report.decode("utf-8", errors="replace")))
        if len(projected) == 1 and out is None:
            closed = _write_stdout(projected[0])
            if closed is not None:
                return refuse(closed)
        failed = _write_out(out, projected[0]) if out is not None else None
        if failed is None and html is not None:
            failed = _write(html, run_page([_document(one) for one in projected], audits))
        if failed is not None:
            return refuse(failed)
    return 0
