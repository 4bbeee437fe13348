"""The frame document: the two example digests of docs/frames.md, each docs/frames.md#3-what-a-run-does-with-it check
and its message (docs/frames.md)."""

from __future__ import annotations

import json

import pytest
from returns.result import Failure, Success

from metaharness.pure.frames import (
    FrameFault,
    Operation,
    canonical_frame_bytes,
    frame_digest,
    frame_document,
    frame_from_object,
    frame_refusal,
    load_frame,
    refuse_frame_beside_observe,
    seal_frame,
)
from metaharness.pure.refusal import Refusal

SPEC_EXAMPLE = b"""{"format":"metaharness.frame/1","workflow":{"id":"development/default","version":"1"},
 "node":{"id":"implement"},
 "step":{"workflow":"development/default","state":"implement","index":3,"attempt":1},
 "prior":[{"text":"the specification is approved","source":"docs/specs/one.md"}],
 "obligations":[{"text":"the suite is red before the implementation","asked_by":"workflows/development/default.yaml"}],
 "reaching":[],"next":[{"id":"verify"}],
 "handoff":{"handoff":"artifact","name":"the implementation","kind":"change"},
 "operations":[{"op":"search"},{"op":"file.read"},{"op":"file.edit"},{"op":"dir.list"},{"op":"file.write"}],
 "subjects":[{"subject":"file:src/**","operations":[{"op":"file.read"},{"op":"file.edit"},{"op":"file.write"},{"op":"dir.list"},{"op":"search"}]},
             {"subject":"file:**","operations":[{"op":"file.read"},{"op":"dir.list"},{"op":"search"}]}],
 "entities":null,
 "digest":"63f68041c6a314486df8b0c581938af9a7ea3625e883a0fddafd308f2662c19d"}"""
WITH_SUBJECTS = "63f68041c6a314486df8b0c581938af9a7ea3625e883a0fddafd308f2662c19d"
WITHOUT_SUBJECTS = "230412166935cbd5509f886cd0840f22c84f3f065805a1035277185c88a6a632"


def example() -> dict:
    return json.loads(SPEC_EXAMPLE)


def fault_of(document: dict | bytes) -> FrameFault:
    data = document if isinstance(document, bytes) else json.dumps(document).encode()
    result = load_frame(data)
    assert isinstance(result, Failure), result
    return result.failure()


def test_the_spec_example_loads_with_its_stated_digest() -> None:
    frame = load_frame(SPEC_EXAMPLE).unwrap()
    assert frame.digest == WITH_SUBJECTS
    assert frame_digest(frame) == WITH_SUBJECTS
    assert frame.step.index == 3
    assert frame.operations[0] == Operation("dir.list")


def test_canonical_bytes_begin_as_the_spec_shows() -> None:
    canonical = canonical_frame_bytes(load_frame(SPEC_EXAMPLE).unwrap())
    assert canonical.startswith(
        b'{"entities":null,"handoff":{"handoff":"artifact","kind":"change","name":"the implementation"},"next":[{"id":"verify"}],'
    )
    assert b"format" not in canonical and b"digest" not in canonical


def test_the_same_frame_without_subjects_seals_to_the_second_digest() -> None:
    document = example()
    del document["subjects"]
    assert seal_frame(document).unwrap().digest == WITHOUT_SUBJECTS
    document["subjects"] = None
    assert seal_frame(document).unwrap().digest == WITHOUT_SUBJECTS


def test_an_empty_subject_list_is_sealed_and_differs_from_absent() -> None:
    document = example()
    document["subjects"] = []
    sealed = seal_frame(document).unwrap()
    assert sealed.subjects == ()
    assert sealed.digest not in (WITH_SUBJECTS, WITHOUT_SUBJECTS)


def test_optional_fields_omitted_read_as_null() -> None:
    document = example()
    document["prior"][0].pop("source")
    document["obligations"][0]["asked_by"] = None
    document["handoff"].pop("kind")
    del document["entities"]
    frame = seal_frame(document).unwrap()
    canonical = canonical_frame_bytes(frame)
    assert b'"source":null' in canonical and b'"asked_by":null' in canonical
    assert b'"kind":null' in canonical and canonical.startswith(b'{"entities":null,')


def test_a_sealed_document_loads_back() -> None:
    document = example()
    document["entities"] = {"source": "catalogue.json", "members": ["a", "b"]}
    document["operations"].append({"op": "mcp.call", "server": "s", "tool": "t"})
    sealed = seal_frame(document).unwrap()
    written = frame_document(sealed)
    assert written.startswith(b'{"format":"metaharness.frame/1","workflow":')
    assert written.endswith(f'"digest":"{sealed.digest}"}}'.encode())
    assert load_frame(written) == Success(sealed)


def test_check_2_not_json_names_the_parser_detail() -> None:
    fault = fault_of(b"{not json")
    assert fault.check == 2
    assert fault.message.startswith("not a JSON object: ") and len(fault.message) > len("not a JSON object: ")


def test_check_2_a_leading_byte_order_mark_is_not_json() -> None:
    assert fault_of(b"\xef\xbb\xbf" + SPEC_EXAMPLE).check == 2


def test_check_2_deep_nesting_is_a_refusal() -> None:
    assert fault_of(b"[" * 200000).check == 2


def test_check_3_json_but_not_an_object() -> None:
    assert fault_of(b"[1,2]") == FrameFault(3, "not a JSON object: the document is JSON but not an object")


def test_check_4_no_format_tag() -> None:
    document = example()
    del document["format"]
    assert fault_of(document) == FrameFault(4, 'no format tag, expected "metaharness.frame/1"')


@pytest.mark.parametrize(
    ("tag", "shown"), [("metaharness.frame/2", "metaharness.frame/2"), (1, "<not a string>"), (None, "<not a string>")]
)
def test_check_5_unknown_format_tag(tag: object, shown: str) -> None:
    document = example()
    document["format"] = tag
    assert fault_of(document) == FrameFault(5, f'unknown format tag "{shown}", expected "metaharness.frame/1"')


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(extra=1), 'not a frame: unknown field "extra"'),
        (lambda d: d["workflow"].update(owner="x"), 'not a frame: unknown field "owner"'),
        (lambda d: d["step"].update(label="x"), 'not a frame: unknown field "label"'),
        (lambda d: d["subjects"][1]["operations"][0].update(server="x"), 'not a frame: unknown field "server"'),
        (lambda d: d["subjects"][0].update(note="x"), 'not a frame: unknown field "note"'),
        (lambda d: d["handoff"].update(schema="x"), 'not a frame: unknown field "schema"'),
        (lambda d: d["prior"][0].update(weight=1), 'not a frame: unknown field "weight"'),
        (lambda d: d.update(entities={"source": "s", "members": [], "more": 1}), 'not a frame: unknown field "more"'),
        (lambda d: d.pop("node"), 'not a frame: missing field "node"'),
        (lambda d: d["step"].pop("attempt"), 'not a frame: missing field "step.attempt"'),
        (lambda d: d["step"].update(index=True), "not a frame: step.index must be an integer from 0 to 4294967295"),
        (lambda d: d["step"].update(index=2**32), "not a frame: step.index must be an integer from 0 to 4294967295"),
        (lambda d: d["step"].update(attempt=-1), "not a frame: step.attempt must be an integer from 0 to 4294967295"),
        (lambda d: d["step"].update(attempt=1.0), "not a frame: step.attempt must be an integer from 0 to 4294967295"),
        (lambda d: d["workflow"].update(id=7), "not a frame: workflow.id must be a string"),
        (lambda d: d["operations"].append({"op": "find"}), 'not a frame: operations[5].op is "find", which is not an operation of the vocabulary'),
        (lambda d: d["operations"].append({"op": "mcp.call", "server": "s"}), 'not a frame: missing field "operations[5].tool"'),
        (lambda d: d.update(operations={"op": "search"}), "not a frame: operations must be a list"),
        (lambda d: d.update(handoff={"handoff": "later"}), 'not a frame: handoff.handoff must be "none", "artifact" or "structured_answer"'),
        (lambda d: d.update(digest="ABC"), "not a frame: digest must be 64 lowercase hex characters"),
        (lambda d: d.pop("digest"), 'not a frame: missing field "digest"'),
    ],
)
def test_check_6_shape(edit, message: str) -> None:
    document = example()
    edit(document)
    assert fault_of(document) == FrameFault(6, message)


def test_check_7_an_edited_frame_names_both_digests() -> None:
    document = example()
    document["next"][0]["id"] = "release"
    computed = seal_frame(document).unwrap().digest
    assert fault_of(document) == FrameFault(
        7,
        f"the stated digest {WITH_SUBJECTS} does not describe the contents (computed {computed}); "
        "the frame was never sealed or was edited after sealing",
    )


def test_reordering_a_rule_list_changes_the_digest_but_reordering_operations_does_not() -> None:
    document = example()
    document["operations"].reverse()
    document["operations"].append({"op": "search"})
    assert isinstance(load_frame(json.dumps(document, indent=2).encode()), Success)
    document["subjects"].reverse()
    assert fault_of(document).check == 7


def test_frame_set_objects_may_omit_the_tag_but_not_carry_another() -> None:
    document = example()
    del document["format"]
    assert isinstance(frame_from_object(document, format_required=False), Success)
    document["format"] = "metaharness.frame/0"
    assert frame_from_object(document, format_required=False).failure().check == 5


def test_frame_refusal_is_frame_invalid_with_the_path_prefix() -> None:
    fault = fault_of(b"[]")
    assert frame_refusal("step.frame.json", fault) == Refusal(
        "frame-invalid", "frame step.frame.json: not a JSON object: the document is JSON but not an object"
    )


def test_a_frame_beside_observe_is_refused() -> None:
    refused = refuse_frame_beside_observe("observe", "step.frame.json")
    assert refused.failure().code == "observe-with-frame"
    assert "step.frame.json" in refused.failure().message
    assert refuse_frame_beside_observe("frame", "step.frame.json") == Success(None)
    assert refuse_frame_beside_observe("observe", None) == Success(None)
