"""The route proxy's footprint (issue 19; docs/adapters/common.md#route-bounds), printed as ratios against a
baseline measured in the same run: each case starts a fresh proxy process on a verbatim route and reads its
peak RSS (``VmHWM``) and threads from ``/proc`` once the case is in place.

1. Held connections: 1 (the baseline), 16 and 64 connections that sent half a head and wait; aim: peak RSS
   flat, threads at most 16 serving ones plus the accepting one (64 vs 16: 1.00x; the 17th and later are
   answered 503 at once).
2. Bytes: one streamed answer of 1 MiB (the baseline) against 64 MiB through the same proxy; aim: peak RSS
   flat (the body passes in chunks of at most 16 KiB).

Run: ``.venv/bin/python benchmarks/bench_route.py``.
"""

from __future__ import annotations

import http.server
import select
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from metaharness.pure.loopback import MAX_CONNECTIONS

PROXY = """
import sys
from metaharness.pure.claude.adapter import LOOPBACK, WIRE_PATHS
from metaharness.shell.loopback import RouteProxy
proxy = RouteProxy(LOOPBACK, None, None, sys.argv[1], WIRE_PATHS)
print(proxy.start(), flush=True)
sys.stdin.read()
proxy.stop()
"""
HALF_HEAD = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n"
MIB = 1024 * 1024


class _Sized(http.server.BaseHTTPRequestHandler):
    """An upstream answering ``/v1/messages`` with as many MiB of SSE-like bytes as its query names."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        block = b"data: " + b"x" * (64 * 1024 - 8) + b"\n\n"
        for _ in range(int(self.path.partition("?")[2]) * 16):
            self.wfile.write(block)

    def log_message(self, *_: object) -> None:
        pass


@contextmanager
def proxy_process(upstream: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    process = subprocess.Popen([sys.executable, "-c", PROXY, upstream], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdin is not None
    port = int(process.stdout.readline())
    try:
        yield process, port
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def footprint(pid: int) -> tuple[int, int]:
    """Peak RSS in KiB and the thread count of ``pid``."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return int(fields["VmHWM"].split()[0]), int(fields["Threads"])


def answer(connection: socket.socket) -> bytes:
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


def held(upstream: str, count: int) -> tuple[int, int]:
    """Peak RSS and threads with ``count`` connections holding half a head, once the proxy answered a probe
    sent after them (connections are accepted in order, so every held one was accepted by then)."""
    with proxy_process(upstream) as (process, port):
        sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(count)]
        for connection in sockets:
            connection.sendall(HALF_HEAD)
        waiting, turned_away = list(sockets), 0
        while turned_away < count - MAX_CONNECTIONS:
            for connection in select.select(waiting, [], [], 30)[0]:
                waiting.remove(connection)
                turned_away += answer(connection).startswith(b"HTTP/1.1 503")
        with socket.create_connection(("127.0.0.1", port)) as probe:
            probe.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            answer(probe)
        measured = footprint(process.pid)
        for connection in sockets:
            connection.close()
    print(f"  {count:>2} held: peak RSS {measured[0] / 1024:.1f} MiB, {measured[1]} threads, {turned_away} turned away")
    return measured


def streamed(upstream: str, mebibytes: int) -> int:
    """Peak RSS after one answer of ``mebibytes`` MiB streamed through the proxy."""
    with proxy_process(upstream) as (process, port):
        with socket.create_connection(("127.0.0.1", port)) as connection:
            connection.sendall(b"POST /v1/messages?%d HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}" % mebibytes)
            relayed = 0
            while chunk := connection.recv(MIB):
                relayed += len(chunk)
        assert relayed >= mebibytes * MIB
        peak = footprint(process.pid)[0]
    print(f"  {mebibytes:>2} MiB streamed: peak RSS {peak / 1024:.1f} MiB")
    return peak


def main() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sized)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"
    print("held connections (baseline: 1)")
    base_rss, base_threads = held(upstream, 1)
    at_bound = held(upstream, 16)
    beyond = held(upstream, 64)
    for count, (rss, threads) in ((16, at_bound), (64, beyond)):
        print(f"  {count} vs 1: peak RSS {rss / base_rss:.2f}x, threads {threads / base_threads:.2f}x")
    print(f"  64 vs 16: peak RSS {beyond[0] / at_bound[0]:.2f}x, threads {beyond[1] / at_bound[1]:.2f}x")
    print("bytes streamed (baseline: 1 MiB)")
    base = streamed(upstream, 1)
    print(f"  64 vs 1 MiB: peak RSS {streamed(upstream, 64) / base:.2f}x")
    server.shutdown()


if __name__ == "__main__":
    main()
