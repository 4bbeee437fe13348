"""Frame digests (docs/frames.md#2-seal-it, #3-what-a-run-does-with-it): unchanged by key order, whitespace and
duplicate or reordered operations; changed by any change of a sealed field; a mutated frame is always refused with the
docs/frames.md#3-what-a-run-does-with-it message; arbitrary bytes or JSON give a named refusal, never an exception."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from metaharness.pure.frames import (
    FrameFault,
    frame_document,
    frame_from_object,
    load_frame,
    seal_frame,
)
from metaharness.pure.operations import OPERATION_NAMES

TEXT = st.text(max_size=8)
OPTIONAL_TEXT = st.none() | TEXT
COUNTER = st.integers(0, 2**32 - 1)
PLAIN = [name for name in OPERATION_NAMES if name != "mcp.call"]
OPERATION = st.sampled_from(PLAIN).map(lambda op: {"op": op}) | st.fixed_dictionaries(
    {"op": st.just("mcp.call"), "server": st.sampled_from(["s", "t"]), "tool": st.sampled_from(["a", "b"])}
)
OPERATIONS = st.lists(OPERATION, max_size=5)


def optional(key: str, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A one-key dict or nothing: an optional field present with a value, as ``null``, or omitted."""
    return st.one_of(st.just({}), st.just({key: None}), strategy.map(lambda value: {key: value}))


def with_optional(required: st.SearchStrategy[dict[str, Any]], key: str, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(required, optional(key, strategy)).map(lambda pair: {**pair[0], **pair[1]})


PRIOR = with_optional(st.fixed_dictionaries({"text": TEXT}), "source", TEXT)
ASK = with_optional(st.fixed_dictionaries({"text": TEXT}), "asked_by", TEXT)
HANDOFF = st.one_of(
    st.just({"handoff": "none"}),
    with_optional(st.fixed_dictionaries({"handoff": st.just("artifact"), "name": TEXT}), "kind", TEXT),
    st.fixed_dictionaries({"handoff": st.just("structured_answer"), "schema": TEXT}),
)
RULES = st.lists(
    st.fixed_dictionaries({"subject": st.sampled_from(["**", "file:**", "file:src/**", "proc:*", "file:?"]), "operations": OPERATIONS}),
    max_size=3,
)
ENTITIES = st.fixed_dictionaries({"source": TEXT, "members": st.lists(TEXT, max_size=3)})

DOCUMENTS = st.tuples(
    st.fixed_dictionaries(
        {
            "format": st.just("metaharness.frame/1"),
            "workflow": st.fixed_dictionaries({"id": TEXT, "version": TEXT}),
            "node": st.fixed_dictionaries({"id": TEXT}),
            "step": st.fixed_dictionaries({"workflow": TEXT, "state": TEXT, "index": COUNTER, "attempt": COUNTER}),
            "prior": st.lists(PRIOR, max_size=2),
            "obligations": st.lists(ASK, max_size=2),
            "reaching": st.lists(ASK, max_size=2),
            "next": st.lists(st.fixed_dictionaries({"id": TEXT}), max_size=2),
            "handoff": HANDOFF,
            "operations": OPERATIONS,
        }
    ),
    optional("subjects", RULES),
    optional("entities", ENTITIES),
).map(lambda parts: {**parts[0], **parts[1], **parts[2]})


def sealed(document: dict[str, Any]) -> dict[str, Any]:
    return {**document, "digest": seal_frame(document).unwrap().digest}


def shuffled(value: Any, rng: random.Random) -> Any:
    """Every object's keys in a random order; lists kept, except operation sets, which are shuffled
    and given duplicates."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: _shuffled_field(key, value[key], rng) for key in keys}
    if isinstance(value, list):
        return [shuffled(item, rng) for item in value]
    return value


def _shuffled_field(key: str, value: Any, rng: random.Random) -> Any:
    if key == "operations" and isinstance(value, list):
        doubled = value + rng.sample(value, k=len(value) // 2)
        rng.shuffle(doubled)
        return [shuffled(item, rng) for item in doubled]
    return shuffled(value, rng)


@settings(max_examples=200)
@given(DOCUMENTS, st.randoms(use_true_random=False), st.sampled_from([None, 0, 1, 4]), st.booleans())
def test_the_digest_ignores_layout_and_operation_order(
    document: dict[str, Any], rng: random.Random, indent: int | None, spaced: bool
) -> None:
    original = sealed(document)
    separators = (", ", ": ") if spaced else (",", ":")
    data = json.dumps(shuffled(original, rng), indent=indent, separators=separators, ensure_ascii=rng.random() < 0.5)
    loaded = load_frame(data.encode())
    assert isinstance(loaded, Success), loaded
    assert loaded.unwrap().digest == original["digest"]
    assert load_frame(frame_document(loaded.unwrap())) == loaded


def leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to the sealed string and integer leaves that any value of the same type keeps valid."""
    if isinstance(value, dict):
        found: list[tuple[Any, ...]] = []
        for key, item in value.items():
            if key in ("format", "digest", "op", "handoff"):
                continue
            found += leaves(item, (*path, key))
        return found
    if isinstance(value, list):
        return [leaf for n, item in enumerate(value) for leaf in leaves(item, (*path, n))]
    return [path] if isinstance(value, (str, int)) and not isinstance(value, bool) else []


def changed(document: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    edited = json.loads(json.dumps(document))
    holder = edited
    for step in path[:-1]:
        holder = holder[step]
    old = holder[path[-1]]
    holder[path[-1]] = old + "~" if isinstance(old, str) else (old + 1) % 2**32
    return edited


STRUCTURAL = ["add-operation", "add-prior", "toggle-subjects", "null-optional"]


def structurally_changed(document: dict[str, Any], how: str) -> dict[str, Any] | None:
    edited = json.loads(json.dumps(document))
    if how == "add-operation":
        present = {op["op"] for op in edited["operations"]}
        missing = [op for op in PLAIN if op not in present]
        if not missing:
            return None
        edited["operations"].append({"op": missing[0]})
    elif how == "add-prior":
        edited["prior"].append({"text": "new", "source": None})
    elif how == "toggle-subjects":
        edited["subjects"] = [] if edited.get("subjects") is None else None
    else:
        if edited["handoff"]["handoff"] != "artifact" or edited["handoff"].get("kind") is None:
            return None
        edited["handoff"]["kind"] = None
    return edited


@settings(max_examples=200)
@given(DOCUMENTS, st.data())
def test_any_change_of_a_sealed_field_changes_the_digest_and_is_refused(document: dict[str, Any], data: st.DataObject) -> None:
    original = sealed(document)
    paths = leaves(original)
    how = data.draw(st.sampled_from(STRUCTURAL + (["leaf"] if paths else [])))
    edited = changed(original, data.draw(st.sampled_from(paths))) if how == "leaf" else structurally_changed(original, how)
    assume(edited is not None)
    resealed = seal_frame(edited).unwrap().digest
    assert resealed != original["digest"]
    assert load_frame(json.dumps(edited).encode()) == Failure(
        FrameFault(
            7,
            f"the stated digest {original['digest']} does not describe the contents (computed {resealed}); "
            "the frame was never sealed or was edited after sealing",
        )
    )


PREFIXES = {
    2: "not a JSON object: ",
    3: "not a JSON object: the document is JSON but not an object",
    4: 'no format tag, expected "metaharness.frame/1"',
    5: "unknown format tag ",
    6: "not a frame: ",
    7: "the stated digest ",
}


def assert_named(result: Any) -> None:
    if isinstance(result, Success):
        return
    fault = result.failure()
    assert fault.message.startswith(PREFIXES[fault.check]), fault


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_are_a_named_refusal(data: bytes) -> None:
    assert_named(load_frame(data))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["op", "id", "text", "x", "format"]) | TEXT, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300)
@given(DOCUMENTS, st.data())
def test_arbitrary_values_anywhere_in_a_frame_are_a_named_refusal(document: dict[str, Any], data: st.DataObject) -> None:
    original = sealed(document)
    paths = [(key,) for key in original] + leaves(original)
    path = data.draw(st.sampled_from(paths))
    edited = json.loads(json.dumps(original))
    holder = edited
    for step in path[:-1]:
        holder = holder[step]
    holder[path[-1]] = data.draw(JSON)
    assert_named(load_frame(json.dumps(edited).encode()))
    assert_named(frame_from_object(edited, format_required=False))


@settings(max_examples=200)
@given(JSON)
def test_arbitrary_json_is_a_named_refusal(value: Any) -> None:
    assert_named(load_frame(json.dumps(value).encode()))
