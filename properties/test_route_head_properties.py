"""Properties of the route proxy's head check (docs/adapters/common.md#route-bounds): a head carrying a CR,
LF or NUL inside a header line is always refused, and every head the check lets through is read by h11
as exactly one request with exactly the headers that were sent — never a second request."""

from __future__ import annotations

import h11
from hypothesis import assume, given, reject, settings
from hypothesis import strategies as st

from metaharness.pure.loopback import request_defect

names = st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,12}", fullmatch=True)
values = st.binary(max_size=24)
lines = st.lists(st.tuples(names, values), max_size=8)


def head(headers: list[tuple[str, bytes]]) -> bytes:
    return b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n" + b"".join(
        name.encode() + b": " + value + b"\r\n" for name, value in headers
    ) + b"\r\n"


@settings(max_examples=300)
@given(lines, st.integers(0, 7), st.sampled_from([b"\r", b"\n", b"\0", b"\n\n", b"\r\n\r\n"]))
def test_a_cr_lf_or_nul_inside_a_header_line_is_refused(headers: list[tuple[str, bytes]], at: int, planted: bytes) -> None:
    planted_line = ("X-Planted", b"a" + planted + b"b")
    raw = head([*headers[:at], planted_line, *headers[at:]])
    assert request_defect(raw) is not None


@settings(max_examples=300)
@given(lines)
def test_a_head_the_check_passes_is_one_request_with_the_headers_sent(headers: list[tuple[str, bytes]]) -> None:
    raw = head(headers)
    assume(request_defect(raw) is None)
    parser = h11.Connection(h11.SERVER)
    parser.receive_data(raw)
    try:
        request = parser.next_event()
    except h11.RemoteProtocolError:
        reject()
    assert isinstance(request, h11.Request)
    sent = [(b"Host", b"x"), *((name.encode(), value.strip(b" \t")) for name, value in headers)]
    assert list(request.headers.raw_items()) == sent
    after = parser.next_event()
    assert after is h11.NEED_DATA or isinstance(after, h11.EndOfMessage)
