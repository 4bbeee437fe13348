"""The per-run route proxy, kind-agnostic: the loopback credential proxy (docs/adapters/common.md#loopback-proxy)
generalised to every credential mode (docs/confinement.md).

:class:`RouteProxy` listens on ``127.0.0.1:0`` (plain HTTP, a new port per run) or, for a confined
child, on the Unix socket its bridge forwards to, once every plan check has passed. Only the wire's
own requests pass (``POST`` to the wire's paths); anything else is answered 403, sent nowhere and
named in one ``ROUTE_REFUSED``. Without custody it forwards each request verbatim. With custody
(loopback) one request per connection, ``Connection: close`` on both legs. A request must carry
the run's placeholder; the real token is read from custody for every request under an exclusive
``flock`` on ``<file>.mh-lock`` — never cached, logged, written or handed to the child — and attached
on the way to the upstream (``httpx``, TLS with the system trust store). The response head is flushed
at once and the body relayed in flushed chunks of at most 16 KiB, never parsed, so SSE survives. The
decisions are ``metaharness.pure.loopback``'s.
"""

from __future__ import annotations

import fcntl
import os
import socket
import socketserver
import ssl
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import msgspec
from returns.result import Failure

from metaharness.pure.adapters import LoopbackKind
from metaharness.pure.bounds import CREDENTIAL_FILE_LIMIT
from metaharness.pure.environment import loopback_custody_token
from metaharness.pure.events import Event, RouteTraffic
from metaharness.pure.jsonline import compact
from metaharness.pure.loopback import (
    MAX_HEAD,
    MAX_RETRY_BODY,
    RELAY_CHUNK,
    LoopbackCounters,
    ProxyAnswer,
    RequestHead,
    admit_request,
    bad_gateway,
    forward_headers,
    loopback_expired,
    loopback_refused,
    off_the_wire,
    on_the_wire,
    read_head,
    relay_headers,
    retry_after_401,
    route_refused,
    upstream_url,
    verbatim_headers,
)
from metaharness.pure.witness import (
    RouteAccount,
    http_response_body,
    inflate,
    read_exchange,
    response_complete,
    witness,
)
from metaharness.shell.bounded_reads import read_regular
from metaharness.shell.unix_address import unix_address

if TYPE_CHECKING:
    import httpx

CHILD_READ_S = 60
UPSTREAM_CONNECT_S = 30
UPSTREAM_IDLE_S = 300


def read_custody(kind: LoopbackKind, path: str) -> str | None:
    """The real token in ``path``, read under an exclusive ``flock`` on ``<path>.mh-lock``; ``None``
    when it cannot be read or holds no usable token. Nothing is kept."""
    try:
        with open(f"{path}.mh-lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = read_regular(path, CREDENTIAL_FILE_LIMIT)
    except OSError:
        return None
    token = loopback_custody_token(kind, data)
    return None if isinstance(token, Failure) else token.unwrap()


WITNESS_KEEP = 16 * 1024 * 1024
"""The most response bytes the witness keeps for one exchange; past that the exchange is unreadable."""
ROUTE_SETTLE_S = 2.0
"""How long the route's count waits for a request still being relayed when it is read."""


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = False
    proxy: RouteProxy


class _UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    proxy: RouteProxy


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        proxy = self.server.proxy  # type: ignore[attr-defined]
        connection: socket.socket = self.request
        connection.settimeout(CHILD_READ_S)
        try:
            proxy.serve(connection)
        except OSError:
            pass
        except Exception as error:
            if type(error).__module__.split(".")[0] != "httpx":
                raise


class RouteProxy:
    """One run's proxy: ``start`` binds and returns the port, ``stop`` closes it, ``counters`` and
    ``expired`` report what happened (``expired``: the detail of the one ``auth.expired``, or ``None``).
    ``alert_fd`` becomes readable when ``expired`` is first set, so a run loop can write its
    ``auth.expired`` as it happens; :meth:`take_expired` hands the detail over once.

    ``custody`` and ``placeholder`` are the loopback facts (``None``: forward verbatim); ``paths`` are
    the wire's own request paths; ``route`` counts what was forwarded."""

    def __init__(
        self, kind: LoopbackKind, placeholder: str | None, custody: str | None, upstream: str, paths: tuple[str, ...]
    ) -> None:
        self.kind = kind
        self.placeholder = placeholder
        self.custody = custody
        self.upstream = upstream
        self.paths = paths
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._in_flight = 0
        self._counters = LoopbackCounters()
        self._route = RouteTraffic(requests=0, bytes_up=0, bytes_down=0)
        self._account = RouteAccount()
        self._waited = False
        self._off_wire: list[str] = []
        self.expired: str | None = None
        self._reported = False
        self.alert_fd, self._alert_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._server: _Server | _UnixServer | None = None
        self._stopped = threading.Event()
        self._client_ready = threading.Event()
        self._plain = custody is None and urlsplit(upstream).scheme == "http"
        if self._plain:
            self._client_ready.set()
        else:
            threading.Thread(target=self._build_client, daemon=True).start()

    def _build_client(self) -> None:
        """The upstream client (``httpx``, the system trust store), built beside the run's start-up."""
        import httpx

        self._httpx = httpx
        self._client = httpx.Client(
            verify=ssl.create_default_context(),
            timeout=httpx.Timeout(UPSTREAM_IDLE_S, connect=UPSTREAM_CONNECT_S),
            follow_redirects=False,
        )
        self._client.headers.clear()
        self._client_ready.set()

    @property
    def counters(self) -> LoopbackCounters:
        with self._lock:
            return self._counters

    @property
    def route(self) -> RouteTraffic:
        """What the route carried, once no request is still being relayed (at most ``ROUTE_SETTLE_S``
        later): a child that read its last answer can end before the relay that served it has counted."""
        with self._settled:
            self._settled.wait_for(lambda: self._in_flight == 0, timeout=ROUTE_SETTLE_S)
            self._waited = True
            return self._route

    @property
    def account(self) -> RouteAccount:
        """The route witness's account (docs/decisions.md#the-route-witness), read with ``route`` at the
        terminal record: once ``route`` has waited it does not wait again, and it says so when a relay was
        still open."""
        with self._settled:
            settled = self._settled.wait_for(lambda: self._in_flight == 0, timeout=0 if self._waited else ROUTE_SETTLE_S)
            return self._account if settled else msgspec.structs.replace(self._account, unsettled=True)

    def _witness(self, target: str, body: bytes, response: bytes | None, encoding: str | None) -> None:
        """The one observer of the route: a finished request body and the response body relayed for it
        (``None``: unreadable or over ``WITNESS_KEEP``; ``encoding``: its ``Content-Encoding``), folded
        into the witness's account."""
        exchange = read_exchange(target, body, None if response is None else inflate(response, encoding))
        if exchange is not None:
            with self._lock:
                self._account = witness(self._account, exchange)

    def _count_route(self, up: int, down: int) -> None:
        with self._lock:
            self._route = RouteTraffic(
                requests=self._route.requests + 1,
                bytes_up=self._route.bytes_up + up,
                bytes_down=self._route.bytes_down + down,
            )

    def _count(self, **bump: int) -> None:
        with self._lock:
            values = {name: getattr(self._counters, name) + bump.get(name, 0) for name in self._counters.__struct_fields__}
            self._counters = LoopbackCounters(**values)

    def start(self, socket_path: str | None = None) -> int:
        """Listen on ``127.0.0.1:0`` (or on the Unix socket ``socket_path``, mode 0600) and serve in a
        daemon thread; returns the port (0 on a Unix socket)."""
        server: _Server | _UnixServer
        if socket_path is None:
            server = _Server(("127.0.0.1", 0), _Handler)
            self.port: int = server.server_address[1]
        else:
            with unix_address(socket_path) as address:
                server = _UnixServer(address, _Handler)
            os.chmod(socket_path, 0o600)
            self.port = 0
        server.proxy = self
        self._server = server
        self._serving = threading.Thread(target=self._serve, args=(server,), daemon=True)
        self._serving.start()
        return self.port

    def _serve(self, server: _Server | _UnixServer) -> None:
        """Accept until :meth:`stop` shuts the listening socket (no polling interval)."""
        while not self._stopped.is_set():
            server.handle_request()

    def take_expired(self) -> str | None:
        """The ``auth.expired`` detail, the first time it is asked for after it was set; else ``None``."""
        with self._lock:
            if self.expired is None or self._reported:
                return None
            self._reported = True
            return self.expired

    def wind_up(self, scratch: str) -> tuple[Event, ...]:
        """At a run's wind-up (docs/adapters/common.md#endpoint-route): the one ``auth.expired`` when not yet handed
        over, then ``LOOPBACK_REFUSED`` when a request was refused, then ``ROUTE_REFUSED`` when one was off the
        wire; under loopback the counters are written to ``<scratch>/loopback.json`` for ``--retain-dir``."""
        expired = self.take_expired()
        refused = loopback_refused(self.counters)
        if self.custody is not None:
            with open(os.path.join(scratch, "loopback.json"), "wb") as handle:
                handle.write(compact(self.counters))
        with self._lock:
            off_wire = route_refused(self._off_wire)
        return (
            *(() if expired is None else (loopback_expired(expired),)),
            *(() if refused is None else (refused,)),
            *(() if off_wire is None else (off_wire,)),
        )

    def stop(self) -> None:
        """Stop listening, close the upstream client and the alert pipe."""
        self._stopped.set()
        if self._server is not None:
            try:
                self._server.socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._serving.join()
            self._server.server_close()
        if not self._plain:
            self._client_ready.wait()
            self._client.close()
        for descriptor in (self.alert_fd, self._alert_write):
            os.close(descriptor)

    def serve(self, connection: socket.socket) -> None:
        """One request on one connection."""
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            if not chunk or len(received) > MAX_HEAD:
                return
            received += chunk
        raw_head, _, body = received.partition(b"\r\n\r\n")
        head = read_head(raw_head)
        if head is None:
            self._answer(connection, ProxyAnswer(400, "Bad Request", b""))
            return
        if not on_the_wire(head, self.paths):
            with self._lock:
                self._off_wire.append(f"{head.method} {head.target.partition('?')[0]}")
            self._answer(connection, off_the_wire(self.kind, head))
            return
        admitted = admit_request(self.kind, head, self.placeholder)
        if isinstance(admitted, ProxyAnswer):
            if admitted.refused:
                self._count(refused=1)
            self._answer(connection, admitted)
            return
        while len(body) < admitted:
            chunk = connection.recv(min(65536, admitted - len(body)))
            if not chunk:
                return
            body += chunk
        with self._lock:
            self._in_flight += 1
        try:
            self._forward(connection, head, body[:admitted])
        finally:
            with self._settled:
                self._in_flight -= 1
                self._settled.notify_all()

    def _forward(self, connection: socket.socket, head: RequestHead, body: bytes) -> None:
        if self._plain:
            self._pass_through(connection, head, body)
            return
        if self.custody is None:
            response = self._send(head, body, None)
            if response is None:
                self._answer(connection, bad_gateway(self.kind, f"the upstream {self.upstream} could not be reached"))
                return
            self._count_route(len(body), self._relay(connection, response, head.target, body))
            return
        token = read_custody(self.kind, self.custody)
        if token is None:
            self._answer(connection, bad_gateway(self.kind, f"the custody file {self.custody} could not be read"))
            return
        response = self._send(head, body, token)
        if response is None:
            self._answer(connection, bad_gateway(self.kind, f"the upstream {self.upstream} could not be reached"))
            return
        self._count(forwarded=1)
        if response.status_code == 401:
            held = self._buffer(response)
            again = read_custody(self.kind, self.custody)
            if again is not None and retry_after_401(token, again):
                self._count(refresh_and_retry=1)
                retried = self._send(head, body, again)
                if retried is None:
                    self._answer(connection, bad_gateway(self.kind, f"the upstream {self.upstream} could not be reached"))
                    return
                self._count_route(len(body), self._relay(connection, retried, head.target, body))
                return
            self._count(refresh_failed=1)
            with self._lock:
                if self.expired is None:
                    self.expired = (
                        f"the upstream {self.upstream} answered 401 and the custody token in {self.custody} "
                        "had not changed"
                    )
                    os.write(self._alert_write, b"!")
            self._answer(connection, ProxyAnswer(401, response.reason_phrase or "Unauthorized", held),
                         tuple(response.headers.multi_items()))  # fmt: skip
            return
        self._count_route(len(body), self._relay(connection, response, head.target, body))

    def _pass_through(self, connection: socket.socket, head: RequestHead, body: bytes) -> None:
        """A verbatim route to a plain-HTTP upstream: the request as the child sent it (``Host`` and
        ``Content-Length`` set, ``Connection: close``), the answer relayed byte for byte as it arrives."""
        parts = urlsplit(self.upstream)
        lines = f"{head.method} {head.target} HTTP/1.1\r\n" + "".join(
            f"{key}: {value}\r\n" for key, value in verbatim_headers(head, self.upstream, len(body))
        )
        try:
            upstream = socket.create_connection((parts.hostname, parts.port or 80), timeout=UPSTREAM_CONNECT_S)
        except OSError:
            self._answer(connection, bad_gateway(self.kind, f"the upstream {self.upstream} could not be reached"))
            return
        relayed = 0
        kept: list[bytes] | None = []
        with upstream:
            upstream.settimeout(UPSTREAM_IDLE_S)
            upstream.sendall(lines.encode("latin-1") + b"\r\n" + body)
            seen = False
            try:
                while chunk := upstream.recv(RELAY_CHUNK):
                    connection.sendall(chunk)
                    relayed += len(chunk)
                    if kept is not None and relayed <= WITNESS_KEEP:
                        kept.append(chunk)
                    else:
                        kept = None
                    if not seen and kept is not None and response_complete(b"".join(kept)):
                        seen = True
                        self._witness(head.target, body, *http_response_body(b"".join(kept)))
            finally:
                if not seen:
                    response, encoding = http_response_body(b"".join(kept)) if kept is not None else (None, None)
                    self._witness(head.target, body, response, encoding)
        self._count_route(len(body), relayed)

    def _send(self, head: RequestHead, body: bytes, token: str | None) -> httpx.Response | None:
        headers = (
            verbatim_headers(head, self.upstream, len(body))
            if token is None
            else forward_headers(head, self.upstream, token, len(body))
        )
        self._client_ready.wait()
        request = self._client.build_request(
            head.method, upstream_url(self.upstream, head.target), headers=list(headers), content=body
        )
        try:
            return self._client.send(request, stream=True)
        except self._httpx.HTTPError:
            return None

    @staticmethod
    def _buffer(response: httpx.Response) -> bytes:
        held = b""
        for chunk in response.iter_raw(RELAY_CHUNK):
            held += chunk
            if len(held) > MAX_RETRY_BODY:
                break
        response.close()
        return held[:MAX_RETRY_BODY]

    def _relay(self, connection: socket.socket, response: httpx.Response, target: str, body: bytes) -> int:
        """Relay the response head and body, then show both (as far as they went) to the witness; returns the
        body bytes relayed."""
        relayed = 0
        kept: list[bytes] | None = []
        try:
            head = f"HTTP/1.1 {response.status_code} {response.reason_phrase}\r\n"
            for key, value in relay_headers(tuple(response.headers.multi_items())):
                head += f"{key}: {value}\r\n"
            connection.sendall(head.encode("latin-1") + b"\r\n")
            for chunk in response.iter_raw(RELAY_CHUNK):
                connection.sendall(chunk)
                relayed += len(chunk)
                if kept is not None and relayed <= WITNESS_KEEP:
                    kept.append(chunk)
                else:
                    kept = None
        finally:
            response.close()
            self._witness(target, body, None if kept is None else b"".join(kept), response.headers.get("content-encoding"))
        return relayed

    @staticmethod
    def _answer(
        connection: socket.socket, answer: ProxyAnswer, upstream_headers: tuple[tuple[str, str], ...] | None = None
    ) -> None:
        if upstream_headers is not None:
            kept = [(k, v) for k, v in relay_headers(upstream_headers) if k.lower() not in ("content-length", "connection")]
        else:
            kept = [("Content-Type", "application/json")]
        head = f"HTTP/1.1 {answer.status} {answer.phrase}\r\n"
        for key, value in (*kept, ("Content-Length", str(len(answer.body))), ("Connection", "close")):
            head += f"{key}: {value}\r\n"
        connection.sendall(head.encode("latin-1") + b"\r\n" + answer.body)
