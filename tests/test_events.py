"""The event reader refuses what no parser can follow with the §2.3 message, never an exception
(spec 20 §2.3)."""

from __future__ import annotations

from metaharness.pure.events import read_event


def test_nesting_deeper_than_the_parser_follows_is_not_a_json_object() -> None:
    assert read_event(b"[" * 100000).failure().startswith("not a JSON object: ")


def test_a_text_line_with_a_lone_surrogate_is_not_a_json_object() -> None:
    assert read_event('{"format":"\ud800"}').failure().startswith("not a JSON object: ")


def test_a_leading_byte_order_mark_is_not_a_json_object() -> None:
    line = b'\xef\xbb\xbf{"format":"metaharness.event/1","seq":1,"run":"r","event":"warning","code":"X","message":"m"}'
    assert read_event(line).failure().startswith("not a JSON object: ")
