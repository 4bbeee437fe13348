"""Arbitrary bytes given as a command line give a named refusal, never an exception; a command that
reads passes well-formedness or is refused ``MALFORMED`` (docs/events.md#commands)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Success

from metaharness.pure.commands import (
    COMMAND_NAMES,
    check_supported,
    check_well_formed,
    read_command,
    steering_refusal,
)
from metaharness.pure.events import CommandRefused

FRAMING_PREFIXES = ("not a JSON object: ", "no format tag", "unknown format tag", "unknown command name", "malformed ")

TEXT = st.text(max_size=8)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["decision", "reason", "input", "op", "format", "digest"]) | TEXT, inner, max_size=4),
    max_leaves=10,
)
FIELDS = st.dictionaries(
    st.sampled_from(["id", "call_id", "decision", "frame", "text", "posture", "reason"]) | TEXT, JSON, max_size=6
)
DECISIONS = st.one_of(
    st.fixed_dictionaries({"decision": st.just("allow")}),
    st.fixed_dictionaries({"decision": st.just("deny"), "reason": st.sampled_from(["", " ", "\t\n", "no"]) | TEXT}),
    st.fixed_dictionaries({"decision": st.just("abstain")}),
    st.fixed_dictionaries({"decision": st.just("replace"), "input": JSON}),
)


def processed(line: bytes) -> None:
    """Framing, then (for a command) well-formedness and support; each stage answers with a value."""
    read = read_command(line)
    if not isinstance(read, Success):
        assert read.failure().startswith(FRAMING_PREFIXES)
        assert steering_refusal(read.failure()).startswith("metaharness: the steering line was refused: ")
        return
    command = read.unwrap()
    checked = check_well_formed(command)
    if not isinstance(checked, Success):
        outcome = checked.failure().outcome
        assert isinstance(outcome, CommandRefused) and outcome.refused.code == "MALFORMED"
        assert checked.failure().id == command.id
        return
    supported = check_supported(command, "b10x", ("tool.decide", "interrupt", "halt"))
    if not isinstance(supported, Success):
        assert supported.failure().outcome.refused.code == "UNSUPPORTED_CONTROL"


@settings(max_examples=400)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_are_refused_by_name(line: bytes) -> None:
    processed(line)


@settings(max_examples=400)
@given(st.sampled_from(COMMAND_NAMES) | TEXT, FIELDS, st.sampled_from(["metaharness.command/1", None, 3, "x"]))
def test_arbitrary_objects_are_refused_by_name(name: str, fields: dict[str, Any], tag: Any) -> None:
    line = {**fields, "command": name}
    if tag is not None:
        line["format"] = tag
    processed(json.dumps(line).encode())


@settings(max_examples=200)
@given(TEXT, TEXT, DECISIONS)
def test_every_decide_line_reads_and_an_empty_deny_is_malformed(command_id: str, call_id: str, decision: dict[str, Any]) -> None:
    line = {"format": "metaharness.command/1", "id": command_id, "command": "tool.decide", "call_id": call_id, "decision": decision}
    command = read_command(json.dumps(line).encode()).unwrap()
    checked = check_well_formed(command)
    empty = decision["decision"] == "deny" and not decision["reason"].strip()
    assert isinstance(checked, Success) != empty
