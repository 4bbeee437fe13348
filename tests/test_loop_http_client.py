"""The loop's HTTP/1.1 client (docs/loop.md#transport) against a real socket answering canned bytes: what it
sends, the content codings it undoes, and the answers it refuses (a coding it does not know, a body cut short,
a server that closes, a redirect it never follows, a proxy it never asks)."""

from __future__ import annotations

import gzip
import socket
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from metaharness.shell.loop.http_client import CodingFailure, HttpClient, TransportFailure

BODY = b'data: {"type":"x"}\n\n' * 40


@contextmanager
def answering(answer: bytes) -> Iterator[tuple[str, list[bytes]]]:
    """A server on loopback that reads one request (head and ``content-length`` body), sends ``answer`` and
    closes; yields its URL and the requests it read."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[bytes] = []

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.startswith(b"content-length:")
            )
            while len(rest) < length:
                rest += connection.recv(65536)
            seen.append(head + b"\r\n\r\n" + rest)
            connection.sendall(answer)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1/responses", seen
    finally:
        server.join(timeout=30)
        listener.close()


def response(body: bytes, *headers: str, status: str = "200 OK") -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers, f"content-length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def exchange(answer: bytes) -> tuple[int, bytes, list[bytes]]:
    with answering(answer) as (url, seen):
        got = HttpClient(url).post(url, (("content-type", "application/json"), ("user-agent", "t/1")), b'{"a":1}')
        try:
            return got.status_code, b"".join(got.iter_bytes()), seen
        finally:
            got.close()


def test_the_request_carries_its_headers_and_only_host_and_content_length_besides() -> None:
    status, body, seen = exchange(response(BODY))
    assert (status, body) == (200, BODY)
    port = seen[0].split(b"host: 127.0.0.1:")[1].split(b"\r\n")[0].decode()
    assert (
        seen[0]
        == (
            f"POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
            'user-agent: t/1\r\ncontent-length: 7\r\n\r\n{"a":1}'
        ).encode()
    )


@pytest.mark.parametrize(
    ("coding", "encoded"),
    [
        ("gzip", gzip.compress(BODY)),
        ("deflate", zlib.compress(BODY)),
        ("deflate", zlib.compress(BODY)[2:-4]),
        ("deflate, gzip", gzip.compress(zlib.compress(BODY))),
        ("identity", BODY),
    ],
    ids=["gzip", "deflate", "raw-deflate", "deflate-then-gzip", "identity"],
)
def test_a_content_coding_is_undone_before_the_body_is_handed_on(coding: str, encoded: bytes) -> None:
    assert exchange(response(encoded, f"content-encoding: {coding}"))[1] == BODY


def test_a_coding_it_does_not_undo_is_refused_not_passed_on() -> None:
    with pytest.raises(CodingFailure, match="'br' is not one this client undoes"):
        exchange(response(BODY, "content-encoding: br"))


def test_a_body_labelled_gzip_that_is_not_is_a_coding_failure() -> None:
    with pytest.raises(CodingFailure, match="incorrect header check"):
        exchange(response(BODY, "content-encoding: gzip"))


def test_a_body_cut_short_of_its_length_is_a_transport_failure() -> None:
    with pytest.raises(TransportFailure):
        exchange(response(BODY)[:-10])


def test_a_server_that_closes_without_answering_is_a_transport_failure() -> None:
    with pytest.raises(TransportFailure, match="without sending a response"):
        exchange(b"")


def test_a_close_delimited_body_is_read_to_the_end() -> None:
    assert exchange(b"HTTP/1.1 200 OK\r\n\r\n" + BODY)[1] == BODY


def test_a_redirect_is_a_status_never_followed() -> None:
    status, _, seen = exchange(response(b"", "location: http://127.0.0.1:1/elsewhere", status="307 Temporary Redirect"))
    assert status == 307 and len(seen) == 1


def test_a_proxy_in_the_environment_is_never_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile: proxy variables naming a port nothing listens on change nothing; the provider is reached directly."""
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    assert exchange(response(BODY))[:2] == (200, BODY)


def test_nothing_listening_is_a_transport_failure() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(TransportFailure, match="refused"):
        HttpClient(f"http://127.0.0.1:{port}/v1").post(f"http://127.0.0.1:{port}/v1", (), b"")
