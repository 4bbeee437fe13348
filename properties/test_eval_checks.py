"""The eval checks' matcher and the plan reader: an event check counts exactly the events whose
dotted fields equal the wanted values (a bool never equals a number), its bounds decide pass or
fail, any subset of an event's own fields matches it; arbitrary plan documents give a plan or a
named refusal, never an exception."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure

from metaharness.pure.eval.checks import EventCheck, RunFacts, event_matches, field_at, score_check
from metaharness.pure.eval.plan import OptionShape, read_plan

SCALAR = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["allow", "deny", "frame", "", "1"])
KEY = st.sampled_from(["event", "name", "decision", "by", "seq"])
VALUE = st.recursive(SCALAR, lambda inner: st.dictionaries(KEY, inner, max_size=3), max_leaves=6)
EVENT = st.dictionaries(KEY, VALUE, max_size=4)
FIELDS = st.lists(st.tuples(st.sampled_from(["event", "name", "decision.decision", "decision.by", "seq"]), SCALAR), max_size=3)


def leaves(value: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Every (dotted key, scalar) of ``value``."""
    found: list[tuple[str, Any]] = []
    for key, inner in value.items():
        if isinstance(inner, dict):
            found += leaves(inner, f"{prefix}{key}.")
        else:
            found.append((f"{prefix}{key}", inner))
    return found


def facts(events: list[dict[str, Any]]) -> RunFacts:
    return RunFacts(events=tuple(events), exit=0, control=None, audit=None, files={})


@given(EVENT)
def test_every_subset_of_an_events_own_leaves_matches_it(event: dict[str, Any]) -> None:
    own = leaves(event)
    for cut in range(len(own) + 1):
        assert event_matches(event, tuple(own[:cut]))


@given(EVENT, FIELDS)
def test_a_match_is_every_field_equal_with_bools_apart_from_numbers(event: dict[str, Any], fields: list) -> None:
    expected = all(
        (found := field_at(event, key)) == wanted and isinstance(found, bool) == isinstance(wanted, bool)
        and not isinstance(found, dict)
        for key, wanted in fields
    )
    assert event_matches(event, tuple(fields)) == expected


@given(st.lists(EVENT, max_size=6), FIELDS, st.none() | st.integers(0, 4), st.none() | st.integers(0, 4))
def test_the_bounds_decide_on_the_count(events: list, fields: list, at_least: int | None, at_most: int | None) -> None:
    count = sum(event_matches(event, tuple(fields)) for event in events)
    check = EventCheck(id="c", fields=tuple(fields), at_least=at_least, at_most=at_most)
    outcome = score_check(check, facts(events))
    assert outcome.passed == ((at_least is None or count >= at_least) and (at_most is None or count <= at_most))
    assert outcome.reason.startswith(f"{count} events with ") and "\n" not in outcome.reason


@given(st.lists(EVENT, max_size=6), FIELDS)
def test_adding_an_unmatched_event_changes_no_outcome(events: list, fields: list) -> None:
    check = EventCheck(id="c", fields=(*fields, ("event", "never-emitted")), at_least=1, at_most=None)
    assert score_check(check, facts(events)) == score_check(check, facts([*events, {"event": "other"}]))


OPTIONS = {"model": OptionShape(flag=False, multiple=False), "audit": OptionShape(flag=True, multiple=False),
           "allow-program": OptionShape(flag=False, multiple=True), "decisions": OptionShape(flag=False, multiple=False)}
DOCUMENT = st.recursive(
    SCALAR | st.sampled_from(["metaharness.eval/1", "kind", "b10x", "ask", "HEAD", "repo"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(
        st.sampled_from(["format", "arms", "tasks", "repeat", "id", "prompt", "workspace", "git", "ref", "checks",
                         "kind", "model", "audit", "decisions", "event", "exit", "file", "path", "at-least", "cwd"]),
        inner, max_size=5,
    ),
    max_leaves=20,
)


@given(DOCUMENT)
def test_any_document_is_a_plan_or_a_named_refusal(document: Any) -> None:
    read = read_plan(yaml.safe_dump(document).encode(), OPTIONS)
    if isinstance(read, Failure):
        assert read.failure().code.startswith("plan-") and "\n" not in read.failure().message


@given(st.binary(max_size=64))
def test_any_bytes_are_a_plan_or_a_named_refusal(data: bytes) -> None:
    read = read_plan(data, OPTIONS)
    if isinstance(read, Failure):
        assert read.failure().code in ("plan-unreadable", "plan-malformed")
