"""A steering line that framing refuses is answered whenever it carries a string ``id``: the
``command.result`` is ``MALFORMED`` with the framing error and names that id; without one, only the
stderr line is written. And every ``--timeout`` value reads as the seconds it
spells, or is refused with a message naming it."""

from __future__ import annotations

import json

from hypothesis import assume, given
from hypothesis import strategies as st
from returns.result import Failure

from metaharness.pure.commands import check_well_formed, read_command, unreadable_command
from metaharness.pure.duration import parse_duration
from metaharness.pure.events import CommandRefused

FIELDS = st.dictionaries(
    st.sampled_from(["format", "command", "call_id", "decision", "reason", "text"]),
    st.none() | st.integers() | st.text(max_size=6) | st.just("metaharness.command/1") | st.just("tool.decide"),
    max_size=5,
)


@given(fields=FIELDS, command_id=st.none() | st.text(max_size=6) | st.integers())
def test_a_refused_line_with_a_string_id_is_answered_malformed(fields: dict, command_id: object) -> None:
    line = json.dumps({**fields, "id": command_id} if command_id is not None else fields).encode()
    framed = read_command(line)
    assume(isinstance(framed, Failure))
    unreadable = unreadable_command(line, framed.failure())
    if not isinstance(command_id, str):
        assert unreadable is None
        return
    assert unreadable is not None
    refused = check_well_formed(unreadable).failure()
    assert refused.id == command_id and isinstance(refused.outcome, CommandRefused)
    assert (refused.outcome.refused.code, refused.outcome.refused.reason) == ("MALFORMED", framed.failure())


@given(amount=st.integers(min_value=1, max_value=10**6), unit=st.sampled_from(["", "s", "m", "h"]))
def test_a_duration_reads_as_the_seconds_it_spells(amount: int, unit: str) -> None:
    assert parse_duration(f"{amount}{unit}").unwrap() == amount * {"": 1, "s": 1, "m": 60, "h": 3600}[unit]


@given(text=st.text(max_size=8))
def test_any_text_is_a_duration_or_a_refusal_naming_it(text: str) -> None:
    parsed = parse_duration(text)
    if isinstance(parsed, Failure):
        assert repr(text) in parsed.failure()
    else:
        assert parsed.unwrap() > 0
