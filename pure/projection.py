"""The ``project`` verb as pure functions: a ``metaharness.event/1`` stream read into the
``trace-ir/1`` document (docs/cli.md#project); the page of ``--html`` is ``metaharness.pure.run_page``.

No clock and no randomness: the same input bytes give the same document and page bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.events import SessionStarted, StreamClosed, read_event
from metaharness.pure.jsonline import compact, sha256_hex
from metaharness.pure.refusal import Refusal
from metaharness.pure.stream_ending import stream_completeness

TRACE_FORMAT = "trace-ir/1"
EVENT_SOURCE = "metaharness.event/1"
TARGETS = ("trace-ir",)
UNK_REASON = "no trace-ir/1 family"
_FRAMING_KEYS = frozenset({"format", "seq", "run", "at", "event"})

FAMILIES: Mapping[str, str] = MappingProxyType(
    {
        "session.started": "session_start",
        "session.ended": "run_outcome",
        "usage": "run_outcome",
        "text": "assistant_text",
        "thinking": "assistant_thinking",
        "thinking.estimate": "thinking_estimate",
        "injection": "synthetic_injection",
        "tool.requested": "tool_call",
        "tool.result": "tool_result",
        "rate_limit": "rate_limit",
        "opaque": "opaque",
        "stream.closed": "stream_closed",
    }
)
"""Event name → trace-ir/1 family (docs/cli.md#project); every other (control-plane) event is ``unk``."""


class TraceNode(msgspec.Struct, frozen=True, kw_only=True):
    """One event as a node, keys in docs/cli.md#project's order."""

    index: int
    seq: int
    family: str
    event: str
    at: str | None
    call_id: str | None
    reason: str | None
    data: dict[str, Any]


class TraceSummary(msgspec.Struct, frozen=True, kw_only=True):
    """The document's ``metaharness`` block (docs/cli.md#project)."""

    source: str
    vendor_transcript: Any
    withheld: Any
    available_operations: Any
    hermetic: Any
    stream_complete: str


class TraceDocument(msgspec.Struct, frozen=True, kw_only=True):
    """A ``trace-ir/1`` document (docs/cli.md#project)."""

    format: str
    run: str
    transcript_digest: str
    nodes: tuple[TraceNode, ...]
    metaharness: TraceSummary


def check_projection_request(
    inputs: int, *, target: str, out: str | None, html_out: str | None, source: str | None, reports: int = 0
) -> Result[None, Refusal]:
    """The refusals ``project`` makes before reading anything (docs/cli.md#project): a ``--to`` other than
    ``trace-ir``; three or more inputs, two without ``--html`` or two with ``--out``; a ``--report``
    without ``--html`` (it feeds only the page) or more reports than inputs."""
    if target not in TARGETS:
        return Failure(
            Refusal("projection-target-unknown", f"--to {target}: the only projection target is trace-ir")
        )
    if inputs > 2:
        return Failure(
            Refusal("viewer-column-count", f"{inputs} inputs given: the viewer page has one or two columns")
        )
    if inputs == 2 and html_out is None:
        return Failure(Refusal("viewer-column-count", "two inputs are a two-column page and need --html FILE"))
    if inputs == 2 and out is not None:
        return Failure(
            Refusal(
                "viewer-column-count",
                f"--out {out} is given with two inputs: --out takes one run's document, two runs make --html's page",
            )
        )
    if reports and html_out is None:
        return Failure(Refusal("report-without-html", "--report FILE feeds the run page and needs --html FILE"))
    if reports > inputs:
        return Failure(
            Refusal("viewer-column-count", f"--report is given {reports} times for {inputs} input(s): one per run at most")
        )
    return Success(None)


def _unreadable(name: str, number: int, detail: str) -> Failure[Refusal]:
    return Failure(Refusal("projection-unreadable", f"{name} line {number}: {detail}"))


def _event_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    return lines[:-1] if lines and lines[-1] == b"" else lines


def stream_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of the bytes ``chunks`` make when joined, each without its ``\\n``, as the chunks come: an
    unterminated last line is a line, and nothing after the last ``\\n`` is none (the lines of
    ``data.split(b"\\n")`` less a last empty one)."""
    pending = bytearray()
    for chunk in chunks:
        pieces = chunk.split(b"\n")
        if len(pieces) == 1:
            pending += chunk
            continue
        pending += pieces[0]
        yield bytes(pending)
        yield from pieces[1:-1]
        pending[:] = pieces[-1]
    if pending:
        yield bytes(pending)


def _node(index: int, raw: dict[str, Any]) -> TraceNode:
    name = raw["event"]
    family = FAMILIES.get(name, "unk")
    call_id = raw.get("call_id") if name.startswith("tool.") else None
    return TraceNode(
        index=index,
        seq=raw["seq"],
        family=family,
        event=name,
        at=raw.get("at"),
        call_id=call_id,
        reason=UNK_REASON if family == "unk" else None,
        data={key: value for key, value in raw.items() if key not in _FRAMING_KEYS},
    )


class TraceHead(msgspec.Struct, frozen=True, kw_only=True):
    """What the first pass over a stream learns before any node is written: its run and the document's
    ``metaharness`` block (docs/cli.md#project)."""

    run: str
    summary: TraceSummary


def survey_stream(name: str, lines: Iterable[bytes], *, source: str = EVENT_SOURCE) -> Result[TraceHead, Refusal]:
    """The first pass of ``project`` over a stream's ``lines``: every line read as an event, holding none of
    them. A line that is not an event, or whose ``run`` differs from the first line's, is
    ``projection-unreadable`` naming the file ``name`` and its 1-based line (docs/cli.md#project)."""
    run: str | None = None
    markers: list[tuple[int, int]] = []
    opening: dict[str, Any] | None = None
    count = 0
    for number, line in enumerate(lines, start=1):
        read = read_event(line)
        if isinstance(read, Failure):
            return _unreadable(name, number, read.failure())
        event = read.unwrap()
        if run is None:
            run = event.run
        elif event.run != run:
            return _unreadable(name, number, f'run "{event.run}" differs from the first line\'s "{run}"')
        if isinstance(event.payload, StreamClosed) and len(markers) < 2:
            markers.append((count, event.payload.events))
        if opening is None and isinstance(event.payload, SessionStarted):
            opening = msgspec.json.decode(line)
        count += 1
    if run is None:
        return Failure(Refusal("projection-unreadable", f"{name} line 1: no metaharness.event/1 line"))
    started = opening or {}
    summary = TraceSummary(
        source=source,
        vendor_transcript=started.get("transcript"),
        withheld=started.get("withheld"),
        available_operations=started.get("available_operations"),
        hermetic=started.get("hermetic"),
        stream_complete=stream_completeness(count, markers),
    )
    return Success(TraceHead(run=run, summary=summary))


def trace_nodes(lines: Iterable[bytes]) -> Iterator[TraceNode]:
    """The second pass: each line of a stream :func:`survey_stream` read whole, as its node."""
    for index, line in enumerate(lines):
        yield _node(index, msgspec.json.decode(line))


def project_stream(
    name: str, data: bytes, *, source: str = EVENT_SOURCE, record: bytes | None = None
) -> Result[TraceDocument, Refusal]:
    """The ``trace-ir/1`` document of one ``metaharness.event/1`` stream held whole, ``name`` being the file as
    given; ``record`` is the vendor record the stream was mapped from, whose bytes the digest is then
    over. Refused as :func:`survey_stream` refuses (docs/cli.md#project)."""
    lines = _event_lines(data)
    return survey_stream(name, lines, source=source).map(
        lambda head: TraceDocument(
            format=TRACE_FORMAT,
            run=head.run,
            transcript_digest=sha256_hex(data if record is None else record),
            nodes=tuple(trace_nodes(lines)),
            metaharness=head.summary,
        )
    )


def document_text(document: TraceDocument) -> str:
    """The document as written: 2-space indent, keys in order, a trailing newline (docs/cli.md#project)."""
    return msgspec.json.format(compact(document), indent=2).decode("utf-8") + "\n"


def document_head(head: TraceHead, digest: str) -> bytes:
    """The document's bytes before its first node, as :func:`document_text` writes them: the format, the run,
    the input's digest and the opening of ``nodes``."""
    opening = {"format": TRACE_FORMAT, "run": head.run, "transcript_digest": digest}
    return msgspec.json.format(compact(opening), indent=2)[:-2] + b',\n  "nodes": [\n'


def node_piece(node: TraceNode, *, first: bool) -> bytes:
    """One node's bytes inside ``nodes`` as :func:`document_text` writes them (after a ``,`` unless ``first``)."""
    text = b"    " + msgspec.json.format(compact(node), indent=2).replace(b"\n", b"\n    ")
    return text if first else b",\n" + text


def document_foot(head: TraceHead) -> bytes:
    """The document's bytes after its last node: the close of ``nodes``, the ``metaharness`` block, the newline."""
    block = msgspec.json.format(compact(head.summary), indent=2).replace(b"\n", b"\n  ")
    return b'\n  ],\n  "metaharness": ' + block + b"\n}\n"
