"""The loop's record is declared twice, by its writer (``pure/loop/record.py``) and by the seam's reader
(``pure/b10x/records.py``): every line the writer can produce reads back as the same kind with the
same field values (docs/loop.md#the-record)."""

from __future__ import annotations

import typing
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.b10x.records import read_record
from metaharness.pure.loop.record import RecordLine, encode_line

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
COUNTS = st.integers(min_value=0, max_value=2**53)


def _tag(value: Any) -> str:
    return str(type(value).__struct_config__.tag)


@settings(max_examples=300, deadline=None)
@given(line=st.data())
def test_every_written_line_reads_back_as_its_kind_with_its_values(line: st.DataObject) -> None:
    value = line.draw(st.one_of([st.builds(kind, **_fields(kind)) for kind in typing.get_args(RecordLine)]))
    read = read_record(encode_line(value))
    assert not isinstance(read, (str, type(None))), (value, read)
    assert _tag(read) == _tag(value)
    written = msgspec.to_builtins(value)
    for field, got in msgspec.to_builtins(read).items():
        if field in written:
            assert got == written[field], field


def _fields(kind: type) -> dict[str, st.SearchStrategy[Any]]:
    """Strategies for the fields hypothesis cannot infer well: any JSON value, and counts."""
    hints = typing.get_type_hints(kind)
    chosen: dict[str, st.SearchStrategy[Any]] = {}
    for name, hint in hints.items():
        if hint is Any:
            chosen[name] = JSON_VALUES
        elif hint is int:
            chosen[name] = COUNTS
    return chosen
