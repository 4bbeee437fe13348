"""Event lines: encode → read is the identity for arbitrary valid payloads, and the encoder's bytes obey
docs/events.md#serialisation, #the-twenty-events (compact, key order, explicit nulls, exactly the five omittable
keys left out)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import msgspec.inspect as mi
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from metaharness.pure.events import (
    EVENT_TYPES,
    EventLine,
    SessionEnded,
    Stream,
    _sorted_maps,
    encode_event,
    note,
    note_each,
    read_event,
)

OMITTABLE = {
    ("session.started", "available_operations"),
    ("session.started", "context_files"),
    ("tool.requested", "operations"),
    ("tool.requested", "subjects"),
    ("session.ended", "route"),
    ("session.ended", "rows"),
    ("session.started", "program"),
}
"""The payload keys of docs/events.md#nulls-and-omitted-keys that are omitted instead of nulled (``at`` is the fifth, a
framing key), a confined run's ``session.ended.route`` (docs/confinement.md), and what only a live run writes:
``session.ended.rows`` and ``session.started.program``."""

TEXT = st.text(max_size=12)
INTS = st.integers(-(2**63), 2**63 - 1)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


def json_values(floats: st.SearchStrategy[float]) -> st.SearchStrategy[Any]:
    """Arbitrary JSON values (objects keyed by strings), with floats drawn from ``floats``."""
    return st.recursive(
        st.none() | st.booleans() | INTS | floats | TEXT,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
        max_leaves=8,
    )


def values_of(kind: mi.Type, floats: st.SearchStrategy[float]) -> st.SearchStrategy[Any]:
    """A strategy for the values a msgspec type admits (built from ``msgspec.inspect``)."""
    if isinstance(kind, mi.StrType):
        return TEXT
    if isinstance(kind, mi.IntType):
        return st.integers(max(kind.ge or -(2**63), -(2**63)), 2**63 - 1)
    if isinstance(kind, mi.FloatType):
        return floats
    if isinstance(kind, mi.BoolType):
        return st.booleans()
    if isinstance(kind, mi.NoneType):
        return st.none()
    if isinstance(kind, mi.AnyType):
        return json_values(floats)
    if isinstance(kind, mi.LiteralType):
        return st.sampled_from(kind.values)
    if isinstance(kind, mi.UnionType):
        return st.one_of([values_of(member, floats) for member in kind.types])
    if isinstance(kind, mi.VarTupleType):
        return st.lists(values_of(kind.item_type, floats), max_size=3).map(tuple)
    if isinstance(kind, mi.DictType):
        return st.dictionaries(TEXT, values_of(kind.value_type, floats), max_size=3)
    if isinstance(kind, mi.StructType):
        return structs_of(kind, floats)
    raise AssertionError(f"no strategy for {kind}")


def structs_of(kind: mi.StructType, floats: st.SearchStrategy[float]) -> st.SearchStrategy[Any]:
    fields = {}
    for field in kind.fields:
        strategy = values_of(field.type, floats)
        fields[field.name] = strategy if field.required else st.just(UNSET) | strategy
    return st.fixed_dictionaries(fields).map(lambda values: kind.cls(**values))


def payloads(floats: st.SearchStrategy[float] = FLOATS) -> st.SearchStrategy[Any]:
    return st.one_of([structs_of(mi.type_info(cls), floats) for cls in EVENT_TYPES.values()])


AT = st.just(UNSET) | TEXT


@settings(max_examples=400)
@given(st.integers(1, 2**63 - 1), TEXT, AT, payloads())
def test_encode_then_read_is_the_identity(seq: int, run: str, at: Any, payload: Any) -> None:
    line = encode_event(seq, run, payload, at)
    assert read_event(line).unwrap() == EventLine(seq=seq, run=run, at=at, payload=payload)


PLAIN_FLOATS = st.floats(min_value=1e-4, max_value=1e15) | st.floats(min_value=-1e15, max_value=-1e-4) | st.just(0.0)
"""Floats Python's ``json`` writes exactly as msgspec does (no exponent), so the bytes compare."""


def expected_keys(name: str, payload: Any) -> list[str]:
    return [
        field
        for field in payload.__struct_fields__
        if not ((name, field) in OMITTABLE and getattr(payload, field) is UNSET)
    ]


@settings(max_examples=400)
@given(st.integers(1, 2**31), TEXT, AT, payloads(PLAIN_FLOATS))
def test_the_bytes_obey_the_serialisation_rules(seq: int, run: str, at: Any, payload: Any) -> None:
    line = encode_event(seq, run, payload, at)
    assert line.endswith(b"\n") and line.count(b"\n") == 1 and not line.startswith(b"\xef\xbb\xbf")
    parsed = json.loads(line)
    assert line[:-1] == json.dumps(parsed, ensure_ascii=False, separators=(",", ":")).encode()
    name = type(payload).__struct_config__.tag
    framing = ["format", "seq", "run", *(["at"] if at is not UNSET else []), "event"]
    assert list(parsed) == framing + expected_keys(name, payload)
    assert parsed["format"] == "metaharness.event/1" and parsed["event"] == name
    for field in expected_keys(name, payload):
        if getattr(payload, field) is None:
            assert parsed[field] is None
    for key in ("by_seam", "by_decider"):
        if name == "session.ended":
            assert list(parsed["census"][key]) == sorted(parsed["census"][key])
    if name == "session.ended" and parsed["model_usage"] is not None:
        assert list(parsed["model_usage"]) == sorted(parsed["model_usage"])


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_read_to_a_named_refusal_or_an_event(data: bytes) -> None:
    result = read_event(data)
    assert isinstance(result.value_or(None), EventLine) or result.failure().startswith(
        ("not a JSON object: ", "no format tag", "unknown format tag", "unknown event name", "malformed ")
    )


@settings(max_examples=300)
@given(st.sampled_from(sorted(EVENT_TYPES)), st.dictionaries(TEXT, json_values(FLOATS), max_size=6))
def test_arbitrary_payloads_under_a_known_name_read_or_are_malformed(name: str, fields: dict[str, Any]) -> None:
    line = msgspec.json.encode({**fields, "format": "metaharness.event/1", "seq": 1, "run": "r", "event": name})
    result = read_event(line)
    if not isinstance(result.value_or(None), EventLine):
        assert result.failure().startswith(f"malformed {name}: ")


def concatenated_line(seq: int, run: str, payload: Any, at: Any) -> bytes:
    """The line of docs/events.md#framing-keys put together key by key: the reference the templated encoder
    must match."""
    framing = b'{"format":"metaharness.event/1","seq":' + str(seq).encode() + b',"run":' + msgspec.json.encode(run)
    if at is not UNSET:
        framing += b',"at":' + msgspec.json.encode(at)
    sorted_maps = _sorted_maps(payload) if isinstance(payload, SessionEnded) else payload
    return framing + b"," + msgspec.json.encode(sorted_maps)[1:] + b"\n"


RUNS = st.sampled_from(["replay", "b10x-4821", "golden", "100%", "%d%b%%", 'q"\\\n']) | TEXT


@settings(max_examples=400)
@given(st.integers(1, 2**63 - 1), st.lists(RUNS, min_size=1, max_size=3), AT, payloads())
def test_the_run_template_writes_the_bytes_of_the_concatenated_line(
    seq: int, runs: list[str], at: Any, payload: Any
) -> None:
    for run in runs:
        assert encode_event(seq, run, payload, at) == concatenated_line(seq, run, payload, at)


@settings(max_examples=200)
@given(st.integers(0, 2**31), RUNS, st.lists(payloads(), max_size=4))
def test_noting_several_at_once_notes_what_noting_one_by_one_notes(
    written: int, run: str, items: list[Any]
) -> None:
    one_by_one, values = Stream(run, written), []
    for payload in items:
        one_by_one, value = note(one_by_one, payload)
        values.append(value)
    assert note_each(Stream(run, written), items) == (one_by_one, values)
