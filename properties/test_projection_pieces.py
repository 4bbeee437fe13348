"""``project`` written in pieces is the document written whole (docs/cli.md#project): for any stream made of
the vectors' event lines, text events with any string, and arbitrary bytes, fed in any chunks, the head, the
nodes' pieces and the foot are byte for byte :func:`document_text`, and a refused stream is refused alike."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure

from metaharness.pure.jsonline import sha256_hex
from metaharness.pure.projection import (
    document_foot,
    document_head,
    document_text,
    node_piece,
    project_stream,
    stream_lines,
    survey_stream,
    trace_nodes,
)

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
LINES = sorted({line for path in VECTORS.rglob("*.expected.jsonl") for line in path.read_bytes().splitlines()})


def _text(text: str, at: str | None) -> bytes:
    body = {"format": "metaharness.event/1", "seq": 7, "run": "golden", "event": "text", "text": text,
            "request_id": None, **({"at": at} if at is not None else {})}  # fmt: skip
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


line = st.one_of(
    st.sampled_from(LINES),
    st.builds(_text, st.text(max_size=30), st.one_of(st.none(), st.text(max_size=5))),
    st.sampled_from(LINES),
    st.binary(max_size=12),
)
"""A line: a vector's, a text event, or (less often) bytes that are no event."""
streams = st.tuples(st.lists(line, max_size=12), st.booleans()).map(
    lambda drawn: b"\n".join(drawn[0]) + (b"\n" if drawn[1] and drawn[0] else b"")
)


def _chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[a:b] for a, b in pairwise(points)]


@given(streams, st.lists(st.integers(min_value=0), max_size=8))
@settings(max_examples=300, deadline=None)
def test_the_pieces_are_the_whole_document(data: bytes, cuts: list[int]) -> None:
    lines = list(stream_lines(_chunked(data, cuts)))
    assert lines == [piece for index, piece in enumerate(data.split(b"\n"))
                     if index < data.count(b"\n") or piece]  # fmt: skip
    whole = project_stream("s.jsonl", data)
    surveyed = survey_stream("s.jsonl", lines)
    if isinstance(whole, Failure):
        assert surveyed.failure() == whole.failure()
        return
    head = surveyed.unwrap()
    pieces = b"".join(node_piece(node, first=index == 0) for index, node in enumerate(trace_nodes(lines)))
    written = document_head(head, sha256_hex(data)) + pieces + document_foot(head)
    assert written == document_text(whole.unwrap()).encode("utf-8")
