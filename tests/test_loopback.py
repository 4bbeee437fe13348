"""The loopback credential proxy on real sockets (docs/adapters/common.md#loopback-proxy,
docs/hermetic.md#credentials)."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import socket
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from helpers.emulator import Emulator

from metaharness.pure.claude.adapter import LOOPBACK as CLAUDE_LOOPBACK
from metaharness.pure.claude.vendor import WIRE_PATHS as CLAUDE_WIRE
from metaharness.pure.codex.adapter import LOOPBACK as CODEX_LOOPBACK
from metaharness.pure.codex.vendor import WIRE_PATHS as CODEX_WIRE
from metaharness.pure.loopback import (
    LoopbackCounters,
    RequestHead,
    forward_headers,
    loopback_placeholder,
    loopback_refused,
    relay_headers,
    request_defect,
    retry_after_401,
    upstream_root,
    verbatim_headers,
)
from metaharness.pure.witness import inflate
from metaharness.shell.loopback import RouteProxy, read_custody

TOKEN = "sk-ant-oat01-the-real-token-0123456789"
PLACEHOLDER = "mh-run-claude-1-00112233445566778899aabb"
BODY = {"model": "m", "max_tokens": 8, "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def custody(directory: Path, token: str = TOKEN) -> Path:
    path = directory / ".credentials.json"
    path.write_text(json.dumps({"claudeAiOauth": {"accessToken": token, "expiresAt": 1}}))
    return path


@pytest.fixture
def proxy(tmp_path: Path, emulator: Emulator) -> Iterator[RouteProxy]:
    running = RouteProxy(CLAUDE_LOOPBACK, PLACEHOLDER, str(custody(tmp_path)), emulator, CLAUDE_WIRE)
    running.start()
    yield running
    running.stop()


def url(proxy: RouteProxy) -> str:
    return f"http://127.0.0.1:{proxy.port}/v1/messages?beta=true"


def test_a_request_with_the_placeholder_reaches_upstream_with_the_real_token(
    proxy: RouteProxy, emulator: Emulator
) -> None:
    headers = {"Authorization": f"Bearer {PLACEHOLDER}", "anthropic-version": "2023-06-01", "anthropic-beta": "b1"}
    with httpx.stream("POST", url(proxy), json=BODY, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        chunks = list(response.iter_raw())
    stream = b"".join(chunks)
    assert b"event: message_start" in stream and b"event: message_stop" in stream
    seen = json.loads(emulator.record.read_text().splitlines()[-1])
    assert (seen["credential_header"], seen["credential_length"]) == ("authorization", len(TOKEN))
    assert (seen["anthropic_version"], seen["anthropic_beta"], seen["query"]) == ("2023-06-01", "b1", "beta=true")
    assert proxy.counters == LoopbackCounters(forwarded=1)


def test_the_placeholder_also_arrives_as_x_api_key(proxy: RouteProxy) -> None:
    response = httpx.post(url(proxy), json={**BODY, "stream": False}, headers={"x-api-key": PLACEHOLDER})
    assert response.status_code == 200 and response.json()["type"] == "message"


@pytest.mark.parametrize("offered", [None, "Bearer wrong", f"Bearer {PLACEHOLDER}x", "Basic " + PLACEHOLDER])
def test_a_request_without_the_placeholder_is_refused_and_nothing_is_forwarded(
    proxy: RouteProxy, emulator: Emulator, offered: str | None
) -> None:
    headers = {} if offered is None else {"Authorization": offered}
    response = httpx.post(url(proxy), json=BODY, headers=headers)
    assert response.status_code == 401
    assert response.json()["type"] == "error" and response.json()["error"]["type"] == "authentication_error"
    assert not emulator.record.exists() or emulator.record.read_text() == ""
    assert proxy.counters == LoopbackCounters(refused=1)
    warning = loopback_refused(proxy.counters)
    assert warning is not None and warning.code == "LOOPBACK_REFUSED"


@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/models"), ("POST", "/v1/files"), ("POST", "/echo-headers")])
def test_a_request_off_the_wire_is_refused_even_with_the_placeholder_and_carries_no_token(
    proxy: RouteProxy, emulator: Emulator, tmp_path: Path, method: str, path: str
) -> None:
    response = httpx.request(method, f"http://127.0.0.1:{proxy.port}{path}", headers={"x-api-key": PLACEHOLDER})
    assert response.status_code == 403 and f"{method} {path}" in response.json()["error"]["message"]
    assert not emulator.record.exists() or emulator.record.read_text() == ""
    assert proxy.counters == LoopbackCounters()
    (warning,) = proxy.wind_up(str(tmp_path))
    assert warning.code == "ROUTE_REFUSED" and warning.message.endswith(f": {method} {path}")


def test_a_chunked_body_is_answered_400(proxy: RouteProxy) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port)) as connection:
        connection.sendall(
            b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + PLACEHOLDER.encode()
            + b"\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
        )  # fmt: skip
        answer = connection.recv(65536)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert proxy.counters == LoopbackCounters()


def test_a_body_over_32_mib_is_answered_413(proxy: RouteProxy) -> None:
    with socket.create_connection(("127.0.0.1", proxy.port)) as connection:
        connection.sendall(
            b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: " + PLACEHOLDER.encode()
            + b"\r\nContent-Length: 40000000\r\n\r\n"
        )  # fmt: skip
        assert connection.recv(65536).startswith(b"HTTP/1.1 413 ")


def test_unreadable_custody_is_a_502_api_error(tmp_path: Path, emulator: Emulator) -> None:
    running = RouteProxy(CLAUDE_LOOPBACK, PLACEHOLDER, str(tmp_path / "gone.json"), emulator, CLAUDE_WIRE)
    running.start()
    try:
        response = httpx.post(url(running), json=BODY, headers={"x-api-key": PLACEHOLDER})
        assert response.status_code == 502 and response.json()["error"]["type"] == "api_error"
    finally:
        running.stop()


def test_an_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    running = RouteProxy(CODEX_LOOPBACK, PLACEHOLDER, str(custody(tmp_path)), f"http://127.0.0.1:{port}", CODEX_WIRE)
    running.start()
    try:
        response = httpx.post(
            f"http://127.0.0.1:{running.port}/v1/responses", json=BODY, headers={"Authorization": f"Bearer {PLACEHOLDER}"}
        )
        assert response.status_code == 502 and response.json()["error"]["type"] == "api_error"
    finally:
        running.stop()


class _Rotating(http.server.BaseHTTPRequestHandler):
    """An upstream that answers 401 and rotates custody on the first request, 200 after."""

    seen: ClassVar[list[str]] = []
    custody: Path
    rotate = True

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen.append(self.headers["Authorization"])
        if len(type(self).seen) == 1:
            if type(self).rotate:
                custody(type(self).custody.parent, "sk-ant-oat01-rotated")
            body = b'{"type":"error","error":{"type":"authentication_error","message":"expired"}}'
            self.send_response(401)
        else:
            body = b'{"ok":true}'
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.mark.parametrize("rotate", [True, False])
def test_an_upstream_401_retries_once_only_with_a_changed_token(tmp_path: Path, rotate: bool) -> None:
    handler = type("Handler", (_Rotating,), {"seen": [], "custody": custody(tmp_path), "rotate": rotate})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"
    running = RouteProxy(CLAUDE_LOOPBACK, PLACEHOLDER, str(tmp_path / ".credentials.json"), upstream, CLAUDE_WIRE)
    running.start()
    alert = os.dup(running.alert_fd)
    try:
        response = httpx.post(url(running), json=BODY, headers={"x-api-key": PLACEHOLDER})
    finally:
        running.stop()
        server.shutdown()
    os.set_blocking(alert, False)
    if rotate:
        assert response.status_code == 200
        assert running.take_expired() is None
        assert handler.seen == [f"Bearer {TOKEN}", "Bearer sk-ant-oat01-rotated"]
        assert running.counters == LoopbackCounters(forwarded=1, refresh_and_retry=1)
        assert running.expired is None
    else:
        assert response.status_code == 401 and response.json()["error"]["message"] == "expired"
        assert handler.seen == [f"Bearer {TOKEN}"]
        assert running.counters == LoopbackCounters(forwarded=1, refresh_failed=1)
        assert running.expired is not None and TOKEN not in running.expired
        assert os.read(alert, 8) == b"!"
        assert running.take_expired() == running.expired and running.take_expired() is None
    os.close(alert)


def test_the_placeholder_spelling() -> None:
    assert loopback_placeholder("golden", bytes(12)) == "mh-run-golden-000000000000000000000000"
    assert loopback_placeholder("claude-12/x.y", bytes(range(12))) == "mh-run-claude-12-x-y-000102030405060708090a0b"


def test_forwarded_headers_drop_hop_by_hop_and_credentials() -> None:
    head = RequestHead(
        "POST",
        "/v1/messages?beta=true",
        (("Host", "127.0.0.1:1"), ("Connection", "keep-alive, x-drop"), ("x-drop", "1"), ("Authorization", "Bearer p"),
         ("x-api-key", "p"), ("anthropic-version", "v"), ("Content-Length", "99"), ("Keep-Alive", "5")),
    )  # fmt: skip
    assert forward_headers(head, "https://api.anthropic.com", "tok", 2) == (
        ("Host", "api.anthropic.com"), ("anthropic-version", "v"), ("Authorization", "Bearer tok"),
        ("Accept-Encoding", "gzip, deflate"), ("Content-Length", "2"), ("Connection", "close"),
    )  # fmt: skip
    assert relay_headers((("Content-Type", "x"), ("Transfer-Encoding", "chunked"))) == (
        ("Content-Type", "x"), ("Connection", "close"),
    )  # fmt: skip


def test_a_request_cannot_ask_upstream_for_a_coding_the_witness_cannot_read() -> None:
    """A child (a tool speaking to the route, or a client whose default asks for ``br``/``zstd``) names the codings
    it accepts; the answer would reach the witness as an unreadable exchange, whose calls are never reconciled.
    Forwarded or verbatim, the request asks for exactly the codings ``inflate`` undoes."""
    head = RequestHead("POST", "/v1/responses", (("accept-encoding", "br, zstd"), ("ACCEPT-ENCODING", "zstd")))
    for headers in (forward_headers(head, "https://api.openai.com", "tok", 0),
                    verbatim_headers(head, "http://127.0.0.1:9", 0)):  # fmt: skip
        assert [value for key, value in headers if key.lower() == "accept-encoding"] == ["gzip, deflate"]
        for coding in ("gzip", "deflate"):
            assert inflate(zlib.compress(b"{}") if coding == "deflate" else gzip.compress(b"{}"), coding) == b"{}"


def test_a_gzip_request_body_is_read_by_the_witness(proxy: RouteProxy) -> None:
    """A client (a tool speaking to the route, under --confine off) that gzips its request body: the witness reads
    its tool results through the body's Content-Encoding, so a result for a call the model never emitted is
    still a result on the account (RECORD_FORGED at reconciliation), not an unread body."""
    forged = {**BODY, "messages": [*BODY["messages"], {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_ghost", "content": "ran"}]}]}  # fmt: skip
    headers = {"x-api-key": PLACEHOLDER, "content-encoding": "gzip", "content-type": "application/json"}
    response = httpx.post(url(proxy), content=gzip.compress(json.dumps({**forged, "stream": False}).encode()),
                          headers=headers)  # fmt: skip
    assert response.status_code == 200
    assert "toolu_ghost" in proxy.account.results


def test_request_heads_and_upstreams() -> None:
    assert request_defect(b"POST /v1/messages HTTP/1.1\r\nA: b\r\n\r\n") is None
    assert request_defect(b"POST / HTTP/1.1\r\nno colon\r\n\r\n") == "a header name that is not a token"
    assert upstream_root(CLAUDE_LOOPBACK, None) == "https://api.anthropic.com"
    assert upstream_root(CODEX_LOOPBACK, "http://127.0.0.1:9/") == "http://127.0.0.1:9"
    assert retry_after_401("a", "b") and not retry_after_401("a", "a") and not retry_after_401("a", None)


class _Recording(http.server.BaseHTTPRequestHandler):
    """An upstream that records each request's path, headers and body and echoes the body."""

    seen: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen.append((self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *_: object) -> None:
        pass


def unix_post(path: str, raw: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as connection:
        connection.connect(path)
        connection.sendall(raw)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def test_a_verbatim_route_on_a_socket_passes_the_wire_unchanged_and_refuses_the_rest(tmp_path: Path) -> None:
    handler = type("Handler", (_Recording,), {"seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    running = RouteProxy(CLAUDE_LOOPBACK, None, None, f"http://127.0.0.1:{server.server_address[1]}", CLAUDE_WIRE)
    running.start(str(tmp_path / "route.sock"))
    try:
        body = b'{"model":"m"}'
        head = (b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: 127.0.0.1:47100\r\nx-api-key: the-callers-key\r\n"
                b"anthropic-version: 2023-06-01\r\nContent-Length: %d\r\n\r\n" % len(body))  # fmt: skip
        answer = unix_post(str(tmp_path / "route.sock"), head + body)
        assert answer.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200"))
        assert answer.endswith(body)
        refused = unix_post(str(tmp_path / "route.sock"), b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        assert refused.startswith(b"HTTP/1.1 403 Forbidden") and b"GET /v1/models" in refused
        unix_post(str(tmp_path / "route.sock"), b"POST /v1/files HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    finally:
        events = running.wind_up(str(tmp_path))
        running.stop()
        server.shutdown()
    ((path, headers, seen_body),) = handler.seen
    assert path == "/v1/messages?beta=true" and seen_body == body
    assert headers["x-api-key"] == "the-callers-key" and headers["anthropic-version"] == "2023-06-01"
    assert headers["Host"] == f"127.0.0.1:{server.server_address[1]}"
    (warning,) = events
    assert warning.code == "ROUTE_REFUSED" and warning.message.endswith(": GET /v1/models, POST /v1/files")
    assert running.route.requests == 1 and running.route.bytes_up == len(body) and running.route.bytes_down >= len(body)
    assert not (tmp_path / "loopback.json").exists()


@pytest.mark.parametrize("planted", ["fifo", "link"])
def test_the_custody_lock_is_never_opened_through_a_name_the_child_planted(tmp_path: Path, planted: str) -> None:
    """Hostile (``--confine off``, where the child can write beside the custody file): a FIFO at ``<file>.mh-lock``
    would hold the proxy's open for ever, a link would have it create a file where the child points; the lock is
    opened without following a link or waiting for a reader and must be a regular file, else the token is unread."""
    custody = tmp_path / ".credentials.json"
    custody.write_text(json.dumps({"claudeAiOauth": {"accessToken": "real-token"}}))
    lock, victim = tmp_path / ".credentials.json.mh-lock", tmp_path / "victim"
    if planted == "fifo":
        os.mkfifo(lock)
    else:
        lock.symlink_to(victim)
    outcome: list[str | None] = []
    reader = threading.Thread(target=lambda: outcome.append(read_custody(CLAUDE_LOOPBACK, str(custody))), daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():
        os.close(os.open(lock, os.O_RDONLY | os.O_NONBLOCK))  # let the stuck open through before failing
        reader.join(timeout=30)
    assert outcome == [None] and not victim.exists()
    os.unlink(lock)
    assert read_custody(CLAUDE_LOOPBACK, str(custody)) == "real-token" and lock.is_file()
