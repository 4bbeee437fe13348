"""The catalogue loader (docs/hermetic.md#catalogue): any bytes give a checked catalogue or a named file refusal,
never an exception; a catalogue reads back from its own YAML or JSON, and its scratch copy always
reads back, with the JSON parser and the YAML loader alike, as the same catalogue."""

from __future__ import annotations

import json

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from metaharness.pure.catalogue import (
    FIELD_TYPES,
    Catalogue,
    CatalogueEntry,
    Field,
    check_copy_read_back,
    checked_value,
    load_catalogue,
    scratch_copy,
)

FILE_CODES = {"catalogue-unreadable", "catalogue-not-tool-contract", "catalogue-malformed"}
ODD = "\x00\t\n\r\x1f\x7f\x85\x9f\xa0\u2028\u2029\ufeff\ufffe\uffff\U0001f600\"\\'#:-&*!|>%@`{}[],?"
TEXT = st.text(alphabet=st.one_of(st.sampled_from(ODD), st.characters(exclude_categories=("Cs",))), max_size=24)
ENTRY_NAME = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)
FIELD_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,63}", fullmatch=True)

FIELD = st.builds(Field, FIELD_NAME, st.sampled_from(FIELD_TYPES), st.booleans(), st.none() | TEXT)
ENTRY = st.builds(
    CatalogueEntry,
    ENTRY_NAME,
    TEXT.filter(bool),
    TEXT.filter(bool),
    st.lists(FIELD, max_size=4, unique_by=lambda field: field.name).map(tuple),
)
CATALOGUE = st.builds(Catalogue, st.lists(ENTRY, min_size=1, max_size=4, unique_by=lambda entry: entry.name).map(tuple))

SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.sampled_from(FIELD_TYPES), TEXT)
NEAR = st.recursive(
    SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["format", "entries", "name", "description", "performs", "input", "type", "required", "p"]),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)
DOCUMENT = st.one_of(
    st.binary(max_size=200),
    st.builds(lambda value: json.dumps(value).encode(), NEAR),
    st.builds(lambda value: yaml.safe_dump(value).encode(), NEAR),
    st.builds(lambda value: json.dumps({"format": "metaharness.catalogue/1", "entries": value}).encode(), NEAR),
    st.builds(lambda text: text.encode("utf-8", "surrogatepass"), st.text(max_size=200)),
)


@settings(max_examples=400, deadline=None)
@given(DOCUMENT)
def test_any_bytes_give_a_catalogue_or_a_named_refusal(data: bytes) -> None:
    result = load_catalogue(data, "tools.yaml")
    if isinstance(result, Failure):
        assert result.failure().code in FILE_CODES
        assert result.failure().message.startswith("tools.yaml")
    else:
        assert isinstance(result.unwrap(), Catalogue)


def document_of(catalogue: Catalogue) -> dict[str, object]:
    """The catalogue as an author might write it: optional keys left out when at their default."""
    entries = []
    for entry in catalogue.entries:
        raw: dict[str, object] = {"name": entry.name, "description": entry.description, "performs": entry.performs}
        if entry.input:
            raw["input"] = {
                field.name: {
                    "type": field.type,
                    **({"required": True} if field.required else {}),
                    **({"description": field.description} if field.description is not None else {}),
                }
                for field in entry.input
            }
        entries.append(raw)
    return {"format": "metaharness.catalogue/1", "entries": entries}


@settings(max_examples=150, deadline=None)
@given(CATALOGUE, st.booleans())
def test_a_catalogue_reads_back_from_its_own_yaml_and_json(catalogue: Catalogue, bom: bool) -> None:
    prefix = b"\xef\xbb\xbf" if bom else b""
    as_yaml = prefix + yaml.safe_dump(document_of(catalogue), sort_keys=False).encode()
    as_json = prefix + json.dumps(document_of(catalogue), ensure_ascii=False).encode()
    assert load_catalogue(as_yaml, "tools.yaml") == Success(catalogue)
    assert load_catalogue(as_json, "tools.json") == Success(catalogue)


@settings(max_examples=200, deadline=None)
@given(CATALOGUE)
def test_the_scratch_copy_reads_back_as_the_same_catalogue(catalogue: Catalogue) -> None:
    copy = scratch_copy(catalogue)
    assert copy.endswith(b"\n") and copy.count(b"\n") == 1
    assert json.loads(copy) == checked_value(catalogue) == yaml.safe_load(copy.decode())
    assert load_catalogue(copy, "catalogue.json") == Success(catalogue)
    assert check_copy_read_back(copy, catalogue, "tools.yaml", "x") == Success(None)
