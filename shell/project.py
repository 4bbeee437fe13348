"""``metaharness project``: read the event files, write the trace-ir/1 document and the page
(spec 10 §9). The projection itself is ``metaharness.pure.projection``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from returns.result import Failure

from metaharness.pure.bounds import INPUT_FILE_LIMIT
from metaharness.pure.projection import (
    TraceDocument,
    check_projection_request,
    document_text,
    project_record,
    project_stream,
    viewer_page,
)
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import read_bounded
from metaharness.shell.refusals import refuse


def _write(path: str, text: str) -> Refusal | None:
    try:
        with open(path, "wb") as handle:
            handle.write(text.encode("utf-8"))
    except OSError as error:
        return Refusal("projection-unwritable", f"{path}: cannot be written: {error.strerror or error}")
    return None


def run_project(
    inputs: Sequence[str], *, target: str, out: str | None, html: str | None, source: str | None
) -> int:
    """Project ``inputs`` (one or two event files) by spec 10 §9; exit 0 when written, else 2."""
    checked = check_projection_request(len(inputs), target=target, out=out, html_out=html, source=source)
    if isinstance(checked, Failure):
        return refuse(checked.failure())
    documents: list[TraceDocument] = []
    for path in inputs:
        try:
            with open(path, "rb") as handle:
                data = read_bounded(handle, INPUT_FILE_LIMIT)
        except OSError as error:
            return refuse(Refusal("projection-unreadable", f"{path}: cannot be read: {error.strerror or error}"))
        projected = project_stream(path, data) if source is None else project_record(source, path, data)
        if isinstance(projected, Failure):
            return refuse(projected.failure())
        documents.append(projected.unwrap())
    if len(documents) == 1 and out is None:
        sys.stdout.buffer.write(document_text(documents[0]).encode("utf-8"))
        sys.stdout.buffer.flush()
    writes = ([(out, document_text(documents[0]))] if out is not None else []) + (
        [(html, viewer_page(documents))] if html is not None else []
    )
    for path, text in writes:
        failed = _write(path, text)
        if failed is not None:
            return refuse(failed)
    return 0
