"""The event reader refuses what no parser can follow with the docs/events.md#reading-a-stream message, never an
exception (docs/events.md#reading-a-stream)."""

from __future__ import annotations

from metaharness.pure.events import Stream, ToolRequested, ToolResult, note, note_each, read_event, result_unobserved


def test_nesting_deeper_than_the_parser_follows_is_not_a_json_object() -> None:
    assert read_event(b"[" * 100000).failure().startswith("not a JSON object: ")


def test_a_text_line_with_a_lone_surrogate_is_not_a_json_object() -> None:
    assert read_event('{"format":"\ud800"}').failure().startswith("not a JSON object: ")


def test_a_leading_byte_order_mark_is_not_a_json_object() -> None:
    line = b'\xef\xbb\xbf{"format":"metaharness.event/1","seq":1,"run":"r","event":"warning","code":"X","message":"m"}'
    assert read_event(line).failure().startswith("not a JSON object: ")


def test_the_stream_knows_which_calls_never_ended() -> None:
    def requested(call_id: str) -> ToolRequested:
        return ToolRequested(call_id=call_id, name="Bash", input={}, decision_required=False, deadline_ms=None,
                             seam="none")  # fmt: skip

    def result(call_id: str) -> ToolResult:
        return ToolResult(exit_code=None, outcome_source=None, call_id=call_id, is_error=None, content=None, bytes=None,
                          tool_use_result=None)  # fmt: skip

    stream, _ = note(Stream("r"), requested("a"))
    stream, _ = note_each(stream, [requested("b"), requested("c"), result("a")])
    stream, _ = note(stream, result("c"))
    warning = result_unobserved(stream)
    assert warning is not None and warning.code == "RESULT_UNOBSERVED"
    assert "no result was observed for b:" in warning.message and stream.written == 5
    stream, _ = note(stream, result("b"))
    assert result_unobserved(stream) is None
