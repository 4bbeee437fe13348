"""``metaharness project``: read the event files, write the trace-ir/1 document and the page
(docs/cli.md#project). The projection itself is ``metaharness.pure.projection``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from returns.result import Failure

from metaharness.pure.bounds import INPUT_FILE_LIMIT
from metaharness.pure.kind import Kind
from metaharness.pure.projection import (
    TraceDocument,
    check_projection_request,
    document_text,
    project_record,
    project_stream,
)
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_page import audited_lines, run_page
from metaharness.shell.bounded_reads import read_bounded
from metaharness.shell.output_file import open_output
from metaharness.shell.refusals import refuse


def _write(path: str, text: str) -> Refusal | None:
    try:
        with open_output(path) as handle:
            handle.write(text.encode("utf-8"))
    except OSError as error:
        return Refusal("projection-unwritable", f"{path}: cannot be written: {error.strerror or error}")
    return None


def _read(path: str) -> bytes | Refusal:
    try:
        with open(path, "rb") as handle:
            return read_bounded(handle, INPUT_FILE_LIMIT)
    except OSError as error:
        return Refusal("projection-unreadable", f"{path}: cannot be read: {error.strerror or error}")


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
    documents: list[TraceDocument] = []
    for path in inputs:
        data = _read(path)
        if isinstance(data, Refusal):
            return refuse(data)
        projected = project_stream(path, data) if source is None else project_record(source, path, data)
        if isinstance(projected, Failure):
            return refuse(projected.failure())
        documents.append(projected.unwrap())
    audits: list[tuple[str, ...]] = []
    for path in reports:
        report = _read(path)
        if isinstance(report, Refusal):
            return refuse(report)
        audits.append(audited_lines(report.decode("utf-8", errors="replace")))
    if len(documents) == 1 and out is None:
        sys.stdout.buffer.write(document_text(documents[0]).encode("utf-8"))
        sys.stdout.buffer.flush()
    writes = ([(out, document_text(documents[0]))] if out is not None else []) + (
        [(html, run_page(documents, audits))] if html is not None else []
    )
    for path, text in writes:
        failed = _write(path, text)
        if failed is not None:
            return refuse(failed)
    return 0
