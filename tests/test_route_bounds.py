"""The route proxy parsed and bounded, attacked on real sockets (docs/adapters/common.md#route-bounds):
a head a parser could read as two requests is a 400 that reaches no upstream and is named in
``ROUTE_REFUSED``, on the verbatim route and under loopback custody; a keep-alive upstream never sees a
smuggled second request; at most 16 connections are served at once and the next ones are answered 503,
and request bodies held at once are bounded; an SSE answer reaches the child chunk by chunk while the
upstream is still writing. End to end, a tool of the loop and of Claude Code smuggling through its
confined route gets a 400 and the run's stream names it."""

from __future__ import annotations

import http.server
import json
import os
import selectors
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import httpx
import pytest
from helpers.emulator import running_emulator
from vendor_cli import home_linking_the_clis, pinned_cli

from metaharness.pure.claude.adapter import LOOPBACK as CLAUDE_LOOPBACK
from metaharness.pure.claude.vendor import WIRE_PATHS as CLAUDE_WIRE
from metaharness.pure.loopback import MAX_BODY, MAX_CONNECTIONS, LoopbackCounters
from metaharness.shell.loopback import RouteProxy

PLACEHOLDER = "mh-run-claude-1-00112233445566778899aabb"
WIRE_HEAD = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: " + PLACEHOLDER.encode() + b"\r\n"


class _KeepAlive(http.server.BaseHTTPRequestHandler):
    """A keep-alive upstream (HTTP/1.1, many requests per connection) that records every request it reads."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[str, str]]] = []

    def _record(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).seen.append((self.command, self.path))
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_DELETE = do_GET = _record

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    handler = type("Handler", (_KeepAlive,), {"seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler.seen
    server.shutdown()


@pytest.fixture
def verbatim(upstream: tuple[str, list[tuple[str, str]]]) -> Iterator[RouteProxy]:
    running = RouteProxy(CLAUDE_LOOPBACK, None, None, upstream[0], CLAUDE_WIRE)
    running.start()
    yield running
    running.stop()


@pytest.fixture
def custody_route(tmp_path: Path) -> Iterator[tuple[RouteProxy, Path]]:
    custody = tmp_path / ".credentials.json"
    custody.write_text(json.dumps({"claudeAiOauth": {"accessToken": "sk-ant-oat01-real", "expiresAt": 1}}))
    record = tmp_path / "emulator.jsonl"
    with running_emulator("--scenario", "text", "--record", str(record)) as (base_url, _):
        running = RouteProxy(CLAUDE_LOOPBACK, PLACEHOLDER, str(custody), base_url.removesuffix("/v1"), CLAUDE_WIRE)
        running.start()
        yield running, record
        running.stop()


def exchange(proxy: RouteProxy, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", proxy.port)) as connection:
        connection.sendall(raw)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def refusals(proxy: RouteProxy, scratch: Path) -> str:
    (warning,) = proxy.wind_up(str(scratch))
    assert warning.code == "ROUTE_REFUSED"
    return warning.message


SMUGGLED = b"DELETE /api/delete HTTP/1.1\nHost: x\n\n"


@pytest.mark.parametrize(
    "head",
    [
        WIRE_HEAD + b"X-Note: a\n\n" + SMUGGLED + b"\r\nContent-Length: 2\r\n\r\n{}",
        WIRE_HEAD + b"X-Note: a\n" + SMUGGLED.replace(b"\n", b"\r\n") + b"Content-Length: 2\r\n\r\n{}",
    ],
    ids=["blank-bare-lf", "bare-lf-value"],
)
def test_a_request_smuggled_through_bare_line_feeds_never_reaches_a_keep_alive_upstream(
    verbatim: RouteProxy, upstream: tuple[str, list[tuple[str, str]]], tmp_path: Path, head: bytes
) -> None:
    assert exchange(verbatim, head).startswith(b"HTTP/1.1 400 Bad Request")
    answer = exchange(verbatim, WIRE_HEAD + b"Content-Length: 2\r\n\r\n{}")
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b'{"ok":true}')
    assert upstream[1] == [("POST", "/v1/messages")]
    assert refusals(verbatim, tmp_path).endswith(": a malformed request (a bare CR or LF in the head)")
    assert verbatim.route.requests == 1


MALFORMED = {
    "name-not-a-token": (b"Bad Name: 1\r\n", "a header name that is not a token"),
    "name-with-paren": (b"X(y): 1\r\n", "a header name that is not a token"),
    "value-with-cr": (b"X-Note: a\rb\r\n", "a bare CR or LF in the head"),
    "value-with-lf": (b"X-Note: a\nb\r\n", "a bare CR or LF in the head"),
    "value-with-nul": (b"X-Note: a\x00b\r\n", "a NUL in the head"),
    "folded-value": (b"X-Note: a\r\n b\r\n", "a folded header line"),
    "duplicate-length": (b"Content-Length: 2\r\n", "more than one Content-Length"),
    "conflicting-length": (b"Content-Length: 7\r\n", "more than one Content-Length"),
    "encoding-with-length": (b"Transfer-Encoding: chunked\r\n", "Transfer-Encoding with Content-Length"),
    "length-not-a-number": (None, "a head HTTP/1.1 does not allow"),
}


def malformed_head(extra: bytes | None) -> bytes:
    if extra is None:
        return WIRE_HEAD + b"Content-Length: 2x\r\n\r\n{}"
    return WIRE_HEAD + extra + b"Content-Length: 2\r\n\r\n{}"


@pytest.mark.parametrize("shape", MALFORMED)
def test_each_malformed_shape_is_a_400_sent_nowhere_on_the_verbatim_route(
    verbatim: RouteProxy, upstream: tuple[str, list[tuple[str, str]]], tmp_path: Path, shape: str
) -> None:
    extra, defect = MALFORMED[shape]
    answer = exchange(verbatim, malformed_head(extra))
    assert answer.startswith(b"HTTP/1.1 400 Bad Request") and b"forwards no malformed request" in answer
    assert upstream[1] == []
    assert refusals(verbatim, tmp_path).endswith(f": a malformed request ({defect})")
    assert verbatim.route.requests == 0


@pytest.mark.parametrize("shape", MALFORMED)
def test_each_malformed_shape_is_a_400_sent_nowhere_under_loopback(
    custody_route: tuple[RouteProxy, Path], tmp_path: Path, shape: str
) -> None:
    proxy, record = custody_route
    extra, defect = MALFORMED[shape]
    assert exchange(proxy, malformed_head(extra)).startswith(b"HTTP/1.1 400 Bad Request")
    assert not record.exists() or record.read_text() == ""
    assert proxy.counters == LoopbackCounters()
    assert refusals(proxy, tmp_path).endswith(f": a malformed request ({defect})")


def test_refusals_are_named_once_each_in_first_seen_order(verbatim: RouteProxy, tmp_path: Path) -> None:
    for raw in (malformed_head(b"X-Note: a\x00b\r\n"), b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n",
                malformed_head(b"X-Note: a\x00c\r\n")):  # fmt: skip
        exchange(verbatim, raw)
    assert refusals(verbatim, tmp_path).endswith(": a malformed request (a NUL in the head), GET /v1/models")


def _answered(sockets: list[socket.socket], wanted: int) -> list[socket.socket]:
    """The sockets that have something to read, once ``wanted`` of them do (at most 30 s)."""
    deadline = time.monotonic() + 30
    ready: set[socket.socket] = set()
    with selectors.DefaultSelector() as watching:  # not select(): a worker's descriptors may lie past FD_SETSIZE
        for held in sockets:
            watching.register(held, selectors.EVENT_READ)
        while len(ready) < wanted and time.monotonic() < deadline:
            for key, _ in watching.select(deadline - time.monotonic()):
                ready.add(key.fileobj)  # type: ignore[arg-type]
                watching.unregister(key.fileobj)
    return [s for s in sockets if s in ready]


def test_64_held_connections_get_16_threads_and_the_rest_a_503(
    verbatim: RouteProxy, upstream: tuple[str, list[tuple[str, str]]], tmp_path: Path
) -> None:
    threads_before = threading.active_count()
    held = [socket.create_connection(("127.0.0.1", verbatim.port)) for _ in range(64)]
    try:
        turned = _answered(held, 64 - MAX_CONNECTIONS)
        assert len(turned) == 64 - MAX_CONNECTIONS
        for connection in turned:
            answer = connection.recv(65536)
            assert answer.startswith(b"HTTP/1.1 503 Service Unavailable") and b"at most 16 connections at once" in answer
        serving = [connection for connection in held if connection not in turned]
        with selectors.DefaultSelector() as watching:
            for connection in serving:
                watching.register(connection, selectors.EVENT_READ)
            assert watching.select(0) == []
        assert threading.active_count() - threads_before <= MAX_CONNECTIONS
        serving[0].sendall(WIRE_HEAD + b"Content-Length: 2\r\n\r\n{}")
        answer = b""
        while chunk := serving[0].recv(65536):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 ")
    finally:
        for connection in held:
            connection.close()
    assert upstream[1] == [("POST", "/v1/messages")]
    assert refusals(verbatim, tmp_path).endswith(": a connection past 16 at once")


class _Trickle(http.server.BaseHTTPRequestHandler):
    """An SSE upstream that writes its first event, then waits until the test has read it through the proxy."""

    read_first: ClassVar[threading.Event]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"event: message_start\ndata: {}\n\n")
        self.wfile.flush()
        type(self).read_first.wait(30)
        self.wfile.write(b"event: message_stop\ndata: {}\n\n")

    def log_message(self, *_: object) -> None:
        pass


def test_an_sse_answer_reaches_the_child_while_the_upstream_is_still_writing() -> None:
    handler = type("Handler", (_Trickle,), {"read_first": threading.Event()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    running = RouteProxy(CLAUDE_LOOPBACK, None, None, f"http://127.0.0.1:{server.server_address[1]}", CLAUDE_WIRE)
    running.start()
    try:
        with httpx.stream("POST", f"http://127.0.0.1:{running.port}/v1/messages", content=b"{}", timeout=60) as response:
            stream = response.iter_raw()
            first = next(stream)
            handler.read_first.set()
            rest = b"".join(stream)
    finally:
        running.stop()
        server.shutdown()
    assert first.startswith(b"event: message_start") and b"message_stop" not in first
    assert rest.endswith(b"event: message_stop\ndata: {}\n\n")


SMUGGLER = """#!/usr/bin/env python3
import socket
head = (b"POST /v1/responses HTTP/1.1\\r\\nHost: x\\r\\nX-Note: a\\n\\nDELETE /api/delete HTTP/1.1\\nHost: x\\n\\n"
        b"\\r\\nContent-Length: 2\\r\\n\\r\\n{}")
with socket.create_connection(("127.0.0.1", 47100), 10) as connection:
    connection.sendall(head)
    print(connection.recv(65536).split(b"\\r\\n")[0].decode())
"""


def test_a_loop_tool_smuggling_a_request_finds_no_route_in_the_tools_layer(tmp_path: Path) -> None:
    """b10x under ``--confine on``: the loop's ``run`` tool tries to send the smuggling head to the route bridge
    inside the view, but the tools' layer has no network (docs/confinement.md#two-layers): it cannot connect,
    the upstream records only the loop's own requests and the run completes. (The proxy's own answer to the
    head, a 400 named in ``ROUTE_REFUSED``, is shown on the socket above.)"""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(Path(sys.executable).parent / "b10x-harness")
    probe = home / ".local" / "bin" / "probe"
    probe.write_text(SMUGGLER)
    probe.chmod(0o755)
    record = tmp_path / "emulator.jsonl"
    with running_emulator("--scenario", "flat-run", "--record", str(record), "--record-bodies") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "b10x", "--decisions", "observe", "--model",
                "b10x-emulated", "--model-endpoint", base_url, "--allow-program", "probe", "-p", "probe"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=120,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    bodies = record.read_text()
    assert "/api/delete" not in bodies and "HTTP/1.1 400 Bad Request" not in bodies
    events = [json.loads(line) for line in done.stdout.splitlines()]
    (ended,) = [event for event in events if event["event"] == "session.ended"]
    assert ended["route"]["requests"] == len(bodies.splitlines()) and events[-1]["reason"] == "completed"
    assert "Connection refused" in bodies or "Network is unreachable" in bodies, bodies[-2000:]
    assert not [event for event in events if event["event"] == "warning" and event["code"] == "ROUTE_REFUSED"]


class _Holding(http.server.BaseHTTPRequestHandler):
    """An upstream that reads each body, says it arrived, and answers only once the test releases it."""

    arrived: ClassVar[threading.Semaphore]
    release: ClassVar[threading.Event]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).arrived.release()
        type(self).release.wait(60)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *_: object) -> None:
        pass


def test_request_bodies_held_at_once_are_bounded_and_the_next_request_is_a_503(tmp_path: Path) -> None:
    handler = type("Handler", (_Holding,), {"arrived": threading.Semaphore(0), "release": threading.Event()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    running = RouteProxy(CLAUDE_LOOPBACK, None, None, f"http://127.0.0.1:{server.server_address[1]}", CLAUDE_WIRE)
    running.start()
    largest = WIRE_HEAD + b"Content-Length: %d\r\n\r\n" % MAX_BODY + b"x" * MAX_BODY
    answers: list[bytes] = []
    senders = [threading.Thread(target=lambda: answers.append(exchange(running, largest))) for _ in range(2)]
    try:
        for sender in senders:
            sender.start()
        assert handler.arrived.acquire(timeout=60) and handler.arrived.acquire(timeout=60)
        refused = exchange(running, WIRE_HEAD + b"Content-Length: 2\r\n\r\n{}")
        handler.release.set()
        for sender in senders:
            sender.join(60)
        assert exchange(running, WIRE_HEAD + b"Content-Length: 2\r\n\r\n{}").startswith(b"HTTP/1.1 200 ")
        message = refusals(running, tmp_path)
    finally:
        running.stop()
        server.shutdown()
    assert refused.startswith(b"HTTP/1.1 503 Service Unavailable") and b"64 MiB of request bodies at once" in refused
    assert [answer[:15] for answer in answers] == [b"HTTP/1.1 200 OK"] * 2
    assert message.endswith(": a request past 64 MiB of bodies held at once")


SMUGGLING_STEP = (
    "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', 47100), 10); "
    "s.sendall(b'POST /v1/x HTTP/1.1\\r\\nHost: x\\r\\nX-Note: a\\n\\nDELETE /api/delete HTTP/1.1\\nHost: x\\n\\n"
    "\\r\\nContent-Length: 2\\r\\n\\r\\n{}'); print(s.recv(4096).split(b'\\r\\n')[0].decode())\""
)


def test_a_claude_tool_smuggling_through_the_verbatim_route_finds_no_route(tmp_path: Path) -> None:
    """The pinned Claude Code under ``--credentials none --model-endpoint`` (the verbatim route) and the
    default confinement: a Bash call tries to send the smuggling head to the route bridge, but runs in the
    tools' layer, which has no network: nothing of it reaches the emulator and no request is refused
    because none arrived. (Codex's own sandbox gives its shell calls no socket at all: EPERM.)"""
    kind = "claude"
    if pinned_cli(kind) is None:
        pytest.skip(f"no pinned {kind}")
    home = home_linking_the_clis(tmp_path / "home")
    record = tmp_path / "emulator.jsonl"
    with running_emulator("--scenario", "claude-bash-steps", "--record", str(record), "--record-bodies") as (
        base_url,
        _,
    ):
        argv = [sys.executable, "-m", "metaharness.shell", "run", kind, "--decisions", "observe", "--credentials",
                "none", "--model-endpoint", base_url.removesuffix("/v1"), "-p", f"do the steps\n$ {SMUGGLING_STEP}\n"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, env={**os.environ, "HOME": str(home)}, timeout=240,
                              stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = [json.loads(line) for line in record.read_text().splitlines()]
    assert {(request["method"], request["path"]) for request in seen} == {("POST", "/v1/messages")}
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = json.dumps([event for event in events if event["event"] == "tool.result"])
    assert "Connection refused" in results and "400 Bad Request" not in results, results
    assert not [event for event in events if event["event"] == "warning" and event["code"] == "ROUTE_REFUSED"]


def test_a_link_planted_at_loopback_json_is_neither_followed_nor_truncated(
    custody_route: tuple[RouteProxy, Path], tmp_path: Path
) -> None:
    proxy, _ = custody_route
    host_file = tmp_path / "host.txt"
    host_file.write_text("the operator's file\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "loopback.json").symlink_to(host_file)
    (warning,) = proxy.wind_up(str(scratch))
    assert warning.code == "RETAIN_FAILED" and warning.message.startswith(f"{scratch / 'loopback.json'}: ")
    assert host_file.read_text() == "the operator's file\n"
