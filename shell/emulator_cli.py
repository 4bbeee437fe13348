"""``b10x-emulator``: the deterministic loopback provider (docs/loop.md#emulator). The shell binds, reads
requests, counts POSTs, sleeps where the answer says, writes bytes and the record; every answer and
record line is decided by ``metaharness.pure.emulator``."""

from __future__ import annotations

import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import BinaryIO
from urllib.parse import urlsplit

import click
from returns.result import Failure

from metaharness.pure.budgets import EMULATOR_POLL_S
from metaharness.pure.emulator.answer import MAX_BODY, answer_request
from metaharness.pure.emulator.listen import (
    Listen,
    announcement,
    plan_listen,
    scenario_list,
)
from metaharness.pure.emulator.record import record_line
from metaharness.shell.parse_output import ClosedAtParse, stdout_closed_refusal
from metaharness.shell.standard_streams import drop_stdout, stand_in_closed_streams

_CHUNK_LINE_LIMIT = 4096
"""The longest chunk-size (or trailer) line read: a line that never ends is a 400, not a growing buffer."""


class _Emulator(ThreadingHTTPServer):
    """The server's shared state: the scenario, the lock-guarded counters and the record file."""

    daemon_threads = True

    def __init__(self, listen: Listen, record: BinaryIO | None, record_bodies: bool) -> None:
        self.address_family = socket.AF_INET6 if listen.ipv6 else socket.AF_INET
        super().__init__((listen.host, 0), _Handler)
        self.scenario = listen.scenario
        self.record = record
        self.record_bodies = record_bodies
        self.lock = threading.Lock()
        self.requests = 0
        self.posts = 0

    def count(self, is_post: bool) -> tuple[int, int]:
        """The request's 1-based sequence number and N, the 1-based count of POSTs (docs/loop.md#answer-function)."""
        with self.lock:
            self.requests += 1
            self.posts += is_post
            return self.requests, self.posts

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that reset or dropped its connection mid-request ends that request quietly; anything
        else is a fault of the emulator's own and keeps its traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]

    def write_record(self, line: bytes) -> None:
        if self.record is not None:
            with self.lock:
                self.record.write(line)
                self.record.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Emulator

    def log_message(self, format: str, *args: object) -> None:
        """No access log: the record file is the log (docs/loop.md#record-file)."""

    def _read_body(self) -> bytes:
        """The request body, at most MAX_BODY + 1 bytes (more is a 413 and closes the connection)."""
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            return self._read_chunked()
        length = int(self.headers.get("content-length") or 0)
        if length < 0:
            raise ValueError("a negative content-length")
        if length > MAX_BODY:
            self.close_connection = True
        return self.rfile.read(min(length, MAX_BODY + 1))

    def _chunk_size(self) -> int:
        """The next chunk's size from a line of at most ``_CHUNK_LINE_LIMIT`` bytes; a longer line or a
        negative size does not parse (``ValueError``)."""
        line = self.rfile.readline(_CHUNK_LINE_LIMIT + 1)
        if len(line) > _CHUNK_LINE_LIMIT:
            raise ValueError("a chunk-size line over its bound")
        size = int(line.split(b";")[0].strip() or b"0", 16)
        if size < 0:
            raise ValueError("a negative chunk size")
        return size

    def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            size = self._chunk_size()
            if size == 0:
                while self.rfile.readline(_CHUNK_LINE_LIMIT) not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(body)
            if len(body) + size > MAX_BODY:
                self.close_connection = True
                return bytes(body) + self.rfile.read(MAX_BODY + 1 - len(body))
            body += self.rfile.read(size)
            self.rfile.readline(_CHUNK_LINE_LIMIT)

    def _serve(self) -> None:
        target = urlsplit(self.path)
        try:
            raw = self._read_body()
        except ValueError:
            self.send_error(400, "the request body's framing (content-length or chunk size) does not parse")
            return
        seq, n = self.server.count(self.command == "POST")
        headers = tuple((name, value) for name, value in self.headers.items())
        exchange = answer_request(self.server.scenario, self.command, target.path, headers, raw, n)
        self.server.write_record(record_line(
            seq=seq, scenario=self.server.scenario, method=self.command, path=target.path,
            query=target.query or None, headers=headers, raw=raw, exchange=exchange,
            with_body=self.server.record_bodies))
        answer = exchange.answer
        if answer.close:
            self.close_connection = True
        try:
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            self.end_headers()
            for chunk in answer.chunks if self.command != "HEAD" else ():
                if answer.delay_ms:
                    time.sleep(answer.delay_ms / 1000)
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve


class _EmulatorCommand(ClosedAtParse):
    program = "b10x-emulator"


@click.command(cls=_EmulatorCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--scenario", default="text", show_default=True, help="The one scenario this process answers.")
@click.option("--record", "record_path", type=click.Path(dir_okay=False), default=None,
              help="Append one line of request facts per request to this file.")
@click.option("--record-bodies", is_flag=True, help="Also record each request body.")
@click.option("--host", default="127.0.0.1", show_default=True, help="A loopback address to bind.")
@click.option("--list-scenarios", is_flag=True, help="Print the JSON list of scenario names and exit.")
def _command(scenario: str, record_path: str | None, record_bodies: bool, host: str, list_scenarios: bool) -> None:
    """Serve one emulator scenario on a loopback port until SIGINT or SIGTERM (docs/loop.md#emulator)."""
    if list_scenarios:
        try:
            sys.stdout.buffer.write(scenario_list())
            sys.stdout.flush()
        except BrokenPipeError:  # click would exit 1 in silence
            drop_stdout()
            sys.exit(stdout_closed_refusal("b10x-emulator", "the scenario list"))
        return
    planned = plan_listen(scenario, host)
    if isinstance(planned, Failure):
        refusal = planned.failure()
        sys.stderr.write(f"b10x-emulator: {refusal.code}: {refusal.message}\n")
        sys.exit(2)
    listen = planned.unwrap()
    try:
        record = open(record_path, "ab") if record_path is not None else None  # noqa: SIM115 - held for the process
    except OSError as error:
        sys.stderr.write(f"b10x-emulator: record-unwritable: `{record_path}`: {error.strerror}\n")
        sys.exit(2)
    server = _Emulator(listen, record, record_bodies)

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stdout.buffer.write(announcement(listen, server.server_address[1]))
    sys.stdout.flush()
    server.serve_forever(poll_interval=EMULATOR_POLL_S)
    server.server_close()
    if record is not None:
        record.close()


def main() -> None:
    """The ``b10x-emulator`` console script: a closed standard stream gets its stand-in first
    (docs/cli.md#closed-standard-streams), so a closed stdout is ``stdout-closed``, never a traceback."""
    stand_in_closed_streams()
    _command()
