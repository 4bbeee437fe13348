"""The SSE framer (docs/loop.md#transport): line endings, data joining, bounds, EOF inside an event."""

from metaharness.pure.wires import anthropic_messages, openai_responses
from metaharness.pure.wires.neutral import WireError
from metaharness.pure.wires.sse import SseBroken, SseEnd, SseFrame, frame_sse


def frames(*chunks: bytes, **caps: int) -> list[object]:
    return list(frame_sse(chunks, **caps))


def test_every_line_ending_ends_a_line_and_blank_lines_end_events() -> None:
    stream = b"data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\n"
    assert frames(stream) == [SseFrame(b"a"), SseFrame(b"b"), SseFrame(b"c"), SseFrame(b"d"), SseEnd(False)]


def test_a_carriage_return_split_from_its_line_feed_is_one_line_end() -> None:
    assert frames(b"data: x\r", b"\n\r", b"\n") == [SseFrame(b"x"), SseEnd(False)]


def test_data_lines_join_with_newline_and_one_leading_space_is_dropped() -> None:
    assert frames(b"data:  two\ndata:one\ndata\n\n") == [SseFrame(b" two\none\n"), SseEnd(False)]


def test_comments_event_id_retry_are_ignored() -> None:
    stream = b": keepalive\nevent: ignored\nid: 7\nretry: 10\ndata: {}\ndatax: no\n\n"
    assert frames(stream) == [SseFrame(b"{}"), SseEnd(False)]


def test_an_event_without_data_yields_nothing() -> None:
    assert frames(b"event: ping\n\n") == [SseEnd(False)]


def test_eof_inside_an_event_is_partial() -> None:
    assert frames(b"data: a\n\ndata: b\n") == [SseFrame(b"a"), SseEnd(True)]
    assert frames(b"data: a\n\ndata: hal") == [SseFrame(b"a"), SseEnd(True)]


def test_an_event_over_its_bound_is_broken() -> None:
    result = frames(b"data: " + b"x" * 100 + b"\n\n", event_cap=50)
    assert result == [SseBroken("an event is over the 50 byte bound")]


def test_an_unterminated_line_over_the_event_bound_is_broken_early() -> None:
    assert frames(b"data: " + b"x" * 100, event_cap=50) == [SseBroken("an event is over the 50 byte bound")]


def test_a_stream_over_its_bound_is_broken() -> None:
    result = frames(*[b"data: a\n\n"] * 10, stream_cap=40)
    assert result[-1] == SseBroken("the stream is over the 40 byte bound")
    assert result[:-1] == [SseFrame(b"a")] * 4


def test_non_utf8_data_is_a_protocol_error_on_both_wires() -> None:
    stream = b'data: {"type":"\xff"}\n\n'
    for decode in (openai_responses.decode_stream, anthropic_messages.decode_stream):
        [error] = list(decode(frame_sse([stream]), "m"))
        assert isinstance(error, WireError) and error.error == "protocol"
