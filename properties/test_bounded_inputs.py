"""No input of any size or depth raises: JSON nested up to far past Python's recursion limit, brackets
hidden in strings, unterminated values and long lines go through every reader of harness, model and
embedder input and come out as that reader's named outcome; lines are cut to their bound whatever the
chunking."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure

from metaharness.pure.b10x.records import read_record
from metaharness.pure.bounds import JSON_DEPTH_LIMIT, decode_bounded, too_deep
from metaharness.pure.commands import read_command
from metaharness.pure.events import read_event
from metaharness.pure.frames import decode_json
from metaharness.pure.hook_channel import read_hook_request
from metaharness.shell.bounded_reads import LineCutter


def nested(depth: int, opener: bytes, closer: bytes, inner: bytes, closed: bool) -> bytes:
    return opener * depth + inner + (closer * depth if closed else b"")


documents = st.builds(
    nested,
    depth=st.integers(0, 20000),
    opener=st.sampled_from((b"[", b'{"a":', b'{"kind":"tool-requested","call_id":"c","name":"x","arguments":')),
    closer=st.sampled_from((b"]", b"}")),
    inner=st.sampled_from((b"1", b'"[[[["', b"", b"null", b'"\\"\\"[[\\', b'"\\\\"')),
    closed=st.booleans(),
)


def depth_of(value: object) -> int:
    stack, deepest = [(value, 1)], 0
    while stack:
        item, level = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


@settings(max_examples=200, deadline=None)
@given(document=documents)
def test_no_reader_raises_on_any_depth(document: bytes) -> None:
    read_record(document)
    read_hook_request("k1", document)
    assert isinstance(read_event(document), Failure)
    read_command(document)
    decode_json(document)
    try:
        value: object = decode_bounded(document)
    except ValueError:
        value = None
    assert value is None or depth_of(value) <= JSON_DEPTH_LIMIT


@given(depth=st.integers(0, 400), padding=st.text(alphabet="[]{}\"\\ ", max_size=30))
def test_too_deep_agrees_with_the_decoded_depth(depth: int, padding: str) -> None:
    value: object = padding
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    raw = json.dumps(value).encode()
    assert too_deep(raw) == (depth_of(value) > JSON_DEPTH_LIMIT)


@given(
    lines=st.lists(st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"")), max_size=12),
    cuts=st.lists(st.integers(1, 97), min_size=1, max_size=8),
    limit=st.integers(1, 120),
    terminated=st.booleans(),
)
def test_lines_are_cut_to_their_bound_whatever_the_chunking(
    lines: list[bytes], cuts: list[int], limit: int, terminated: bool
) -> None:
    stream = b"\n".join(lines) + (b"\n" if terminated and lines else b"")
    cutter, out, start, turn = LineCutter(limit), [], 0, 0
    while start < len(stream):
        size = cuts[turn % len(cuts)]
        out += cutter.feed(stream[start : start + size])
        assert len(cutter.pending) <= limit
        start, turn = start + size, turn + 1
    rest = cutter.rest()
    out += [rest] if rest else []
    expected = [(line + b"\n")[:limit] for line in (lines if terminated else lines[:-1])]
    if lines and not terminated and lines[-1]:
        expected.append(lines[-1][:limit])
    assert out == expected
