"""The SSE framer yields the same frames for every chunking of the same bytes (docs/loop.md#transport)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.wires.sse import frame_sse

LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r"])
FIELD = st.sampled_from(["data: ", "data:", "event: ", ": ", "id: ", "retry: ", "data"])
VALUE = st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        for _ in range(draw(st.integers(0, 3))):
            parts.append(draw(FIELD) + draw(VALUE) + draw(LINE_ENDS))
        parts.append(draw(LINE_ENDS))
    if draw(st.booleans()):
        parts.append(draw(FIELD) + draw(VALUE))
    return "".join(parts).encode()


@st.composite
def chunkings(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    data = draw(streams())
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    bounds = [0, *cuts, len(data)]
    return data, [data[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300, deadline=None)
@given(chunkings())
def test_every_chunking_yields_the_same_frames(case: tuple[bytes, list[bytes]]) -> None:
    data, chunks = case
    assert list(frame_sse(chunks)) == list(frame_sse([data]))


@settings(max_examples=200, deadline=None)
@given(streams())
def test_byte_at_a_time_equals_whole(data: bytes) -> None:
    assert list(frame_sse(data[i : i + 1] for i in range(len(data)))) == list(frame_sse([data]))
