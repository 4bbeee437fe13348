"""The per-run route proxy, kind-agnostic: the loopback credential proxy (docs/adapters/common.md#loopback-proxy)
generalised to every credential mode (docs/confinement.md).

:class:`RouteProxy` listens on ``127.0.0.1:0`` (plain HTTP, a new port per run) or, for a confined
child, on the Unix socket its bridge forwards to, once every plan check has passed. Both legs are
parsed with h11 (docs/adapters/common.md#route-bounds): a head a parser could read as two requests is
answered 400, at most ``MAX_CONNECTIONS`` are served at once (the next is answered 503), and bodies
pass in chunks of at most ``RELAY_CHUNK``. Only the wire's own requests pass (``POST`` to the wire's
paths); anything else is answered 403, sent nowhere and named in one ``ROUTE_REFUSED`` with every
malformed request and turned-away connection. Without custody it forwards each request verbatim. With custody
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
import re
import socket
import socketserver
import stat
import threading
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

import msgspec
from returns.result import Failure

from metaharness.pure.adapter import Loopback
from metaharness.pure.bounds import CREDENTIAL_FILE_LIMIT
from metaharness.pure.budgets import CHILD_READ_S, ROUTE_SETTLE_S, UPSTREAM_CONNECT_S, UPSTREAM_IDLE_S
from metaharness.pure.events import Event, RouteTraffic, WarningRaised
from metaharness.pure.jsonline import compact
from metaharness.pure.loopback import (
    BODIES_HELD,
    MAX_CONNECTIONS,
    MAX_HEAD,
    MAX_HELD_BODIES,
    MAX_RETRY_BODY,
    RELAY_CHUNK,
    TURNED_AWAY,
    Headers,
    LoopbackCounters,
    ProxyAnswer,
    RequestHead,
    admit_request,
    bad_gateway,
    bodies_held,
    forward_headers,
    loopback_expired,
    loopback_refused,
    malformed_named,
    malformed_request,
    off_the_wire,
    on_the_wire,
    relay_headers,
    request_defect,
    retry_after_401,
    route_refused,
    turned_away,
    upstream_url,
    verbatim_headers,
)
from metaharness.pure.witness import (
    RouteAccount,
    inflate,
    read_exchange,
    witness,
)
from metaharness.shell.bounded_reads import read_regular
from metaharness.shell.child_tree import write_new_file
from metaharness.shell.unix_address import unix_address

if TYPE_CHECKING:
    import h11
    import httpx


_LOCK_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def read_custody(dialect: Loopback, path: str) -> str | None:
    """The real token in ``path``, read under an exclusive ``flock`` on ``<path>.mh-lock`` (never opened through a
    link, never waiting on a FIFO, a regular file or the token is unread); ``None`` when it cannot be read or holds
    no usable token. Nothing is kept."""
    try:
        lock = os.open(f"{path}.mh-lock", _LOCK_FLAGS, 0o600)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(lock).st_mode):
            return None
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = read_regular(path, CREDENTIAL_FILE_LIMIT)
    except OSError:
        return None
    finally:
        os.close(lock)
    token = dialect.custody_token(data)
    return None if isinstance(token, Failure) else token.unwrap()


WITNESS_KEEP = 16 * 1024 * 1024
"""The most response bytes the witness keeps for one exchange; past that the exchange is unreadable."""


class RouteRequest(NamedTuple):
    """A request the proxy forwards, read whole: the child's head and its body bytes."""

    head: RequestHead
    body: bytes


class UpstreamAnswer(NamedTuple):
    """The upstream's answer as parsed: status, reason phrase, headers, and the body's chunks (each at most
    ``RELAY_CHUNK``; closing the generator closes the upstream leg)."""

    status: int
    reason: str
    headers: Headers
    chunks: Generator[bytes, None, None]


_HEAD_END = re.compile(rb"\n\r?\n")
"""The end of a head as a lenient parser finds it; ``request_defect`` then refuses any end but CRLF CRLF."""


def _receive(connection: socket.socket, deadline: float) -> bytes:
    """At most ``RELAY_CHUNK`` bytes from the child; ``b""`` at its end or once the request's deadline passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        return b""
    connection.settimeout(left)
    try:
        return connection.recv(RELAY_CHUNK)
    except TimeoutError:
        return b""


def _request_body(parser: h11.Connection, connection: socket.socket, deadline: float) -> bytes | None:
    """The body h11 frames by the admitted ``Content-Length``, read in bounded chunks; ``None`` when the
    child ended it early."""
    import h11

    body = bytearray()
    while True:
        try:
            event = parser.next_event()
        except h11.RemoteProtocolError:
            return None
        if event is h11.NEED_DATA:
            parser.receive_data(_receive(connection, deadline))
        elif isinstance(event, h11.Data):
            body += event.data
        else:
            return bytes(body) if isinstance(event, h11.EndOfMessage) else None


def _upstream_chunks(parser: h11.Connection, upstream: socket.socket) -> Generator[bytes, None, None]:
    """The response body h11 reads from the upstream, chunk by chunk as it arrives; the leg is closed at
    the end, on a protocol fault and when the generator is closed."""
    import h11

    try:
        while True:
            event = parser.next_event()
            if event is h11.NEED_DATA:
                parser.receive_data(upstream.recv(RELAY_CHUNK))
            elif isinstance(event, h11.Data):
                yield bytes(event.data)
            else:
                return
    except (OSError, h11.ProtocolError):
        return
    finally:
        upstream.close()


def _plain_answer(upstream_root: str, request: RouteRequest) -> UpstreamAnswer | None:
    """A verbatim route to a plain-HTTP upstream over h11: the child's request with ``verbatim_headers``,
    the answer's head parsed; ``None`` when the upstream cannot be reached or answers no HTTP/1.1."""
    import h11

    parts = urlsplit(upstream_root)
    head, body = request
    parser = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    try:
        upstream = socket.create_connection((parts.hostname, parts.port or 80), timeout=UPSTREAM_CONNECT_S)
    except OSError:
        return None
    try:
        upstream.settimeout(UPSTREAM_IDLE_S)
        headers = [(key.encode("latin-1"), value.encode("latin-1"))
                   for key, value in verbatim_headers(head, upstream_root, len(body))]  # fmt: skip
        sent = parser.send(h11.Request(method=head.method, target=head.target.encode("latin-1"), headers=headers))
        upstream.sendall((sent or b"") + (parser.send(h11.Data(data=body)) or b"") + (parser.send(h11.EndOfMessage()) or b""))
        while not isinstance(event := parser.next_event(), h11.Response):
            if event is h11.NEED_DATA:
                parser.receive_data(upstream.recv(RELAY_CHUNK))
            elif not isinstance(event, h11.InformationalResponse):
                raise h11.RemoteProtocolError("the upstream closed before answering")
    except (OSError, h11.ProtocolError):
        upstream.close()
        return None
    answered = tuple((key.decode("latin-1"), value.decode("latin-1")) for key, value in event.headers.raw_items())
    return UpstreamAnswer(event.status_code, event.reason.decode("latin-1"), answered, _upstream_chunks(parser, upstream))


def _httpx_answer(response: httpx.Response) -> UpstreamAnswer:
    """An ``httpx`` response (HTTP/1.1 read by h11 beneath it) as an :class:`UpstreamAnswer`."""

    def chunks() -> Generator[bytes, None, None]:
        try:
            yield from response.iter_raw(RELAY_CHUNK)
        finally:
            response.close()

    return UpstreamAnswer(response.status_code, response.reason_phrase, tuple(response.headers.multi_items()), chunks())


_Accepted = socket.socket | tuple[bytes, socket.socket]


class _Bounded(socketserver.ThreadingMixIn):
    """At most ``MAX_CONNECTIONS`` connections served at once, one thread each; the next is turned away
    by the accepting thread, so threads never grow with what a child opens."""

    daemon_threads = True
    request_queue_size = 64
    proxy: RouteProxy

    def process_request(self, request: _Accepted, client_address: Any) -> None:
        if not self.proxy.slots.acquire(blocking=False):
            if isinstance(request, socket.socket):
                self.proxy.turn_away(request)
            self.shutdown_request(request)  # type: ignore[attr-defined]
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.proxy.slots.release()
            raise

    def process_request_thread(self, request: _Accepted, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.proxy.slots.release()


class _Server(_Bounded, socketserver.TCPServer):
    allow_reuse_address = False


class _UnixServer(_Bounded, socketserver.UnixStreamServer):
    pass


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        proxy = self.server.proxy  # type: ignore[attr-defined]
        connection: socket.socket = self.request
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

    ``dialect`` is the ``Loopback`` facts its own answers and custody read take their shape from;
    ``custody`` and ``placeholder`` are the loopback facts (``None``: forward verbatim); ``paths`` are
    the wire's own request paths; ``route`` counts what was forwarded."""

    def __init__(
        self, dialect: Loopback, placeholder: str | None, custody: str | None, upstream: str, paths: tuple[str, ...]
    ) -> None:
        self.dialect = dialect
        self.placeholder = placeholder
        self.custody = custody
        self.upstream = upstream
        self.paths = paths
        self._lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._settled = threading.Condition(self._lock)
        self._in_flight = 0
        self._waited = False
        self._held = 0
        self._counters = LoopbackCounters()
        self._route = RouteTraffic(requests=0, bytes_up=0, bytes_down=0)
        self._refusals: list[str] = []
        self._account = RouteAccount()
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
        import ssl

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

    def _count_route(self, up: int, down: int, request: bool = True) -> None:
        """A forwarded request and its bytes; ``request=False`` adds the bytes of one already counted (a request
        counts once its answer begins, so a stream still being relayed at the terminal record is carried)."""
        with self._lock:
            self._route = RouteTraffic(
                requests=self._route.requests + int(request),
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
        wire; under loopback the counters are written to ``<scratch>/loopback.json`` for ``--retain-dir``, a
        new file never opened through a name already there (then one ``RETAIN_FAILED`` names it)."""
        expired = self.take_expired()
        refused = loopback_refused(self.counters)
        unwritten: tuple[Event, ...] = ()
        if self.custody is not None:
            written = write_new_file(scratch, "loopback.json", compact(self.counters))
            if isinstance(written, Failure):
                unwritten = (WarningRaised(code="RETAIN_FAILED", message=f"{scratch}/loopback.json: {written.failure().message}"),)
        with self._lock:
            refusals = route_refused(self._refusals)
        return (
            *(() if expired is None else (loopback_expired(expired),)),
            *(() if refused is None else (refused,)),
            *(() if refusals is None else (refusals,)),
            *unwritten,
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

    def turn_away(self, connection: socket.socket) -> None:
        """A connection past ``MAX_CONNECTIONS``: the 503 written without waiting (it fits the empty send
        buffer of a new connection) and named in ``ROUTE_REFUSED``; the caller closes it."""
        with self._lock:
            self._refusals.append(TURNED_AWAY)
        connection.settimeout(0)
        try:
            self._answer(connection, turned_away(self.dialect))
        except OSError:
            pass

    def serve(self, connection: socket.socket) -> None:
        """One request on one connection: read and checked whole (:meth:`_read_request`), then forwarded."""
        request = self._read_request(connection, time.monotonic() + CHILD_READ_S)
        if isinstance(request, ProxyAnswer):
            self._answer(connection, request)
            return
        if request is None:
            return
        with self._lock:
            self._in_flight += 1
        try:
            self._forward(connection, request)
        finally:
            with self._settled:
                self._in_flight -= 1
                self._held -= len(request.body)
                self._settled.notify_all()

    def _hold(self, length: int) -> bool:
        """Reserve ``length`` bytes of ``MAX_HELD_BODIES`` for a body about to be read."""
        with self._lock:
            if self._held + length > MAX_HELD_BODIES:
                self._refusals.append(BODIES_HELD)
                return False
            self._held += length
            return True

    def _refuse_malformed(self, defect: str) -> ProxyAnswer:
        with self._lock:
            self._refusals.append(malformed_named(defect))
        return malformed_request(self.dialect, defect)

    def _read_request(self, connection: socket.socket, deadline: float) -> RouteRequest | ProxyAnswer | None:
        """The child's request parsed with h11, or the proxy's own answer to it (malformed → 400, off the
        wire → 403, ``admit_request``'s answers), or ``None`` when the child went away before it was whole.
        The head is checked by ``request_defect`` before h11 reads it (h11 merges equal ``Content-Length``
        copies and reads a bare LF as a line end); the body is read in chunks of at most ``RELAY_CHUNK``.
        h11 (and ``ssl``, in ``_build_client``) is imported when first used, after the spawn: the
        child's connection is what needs it, not the stages before it."""
        import h11

        received = b""
        while (end := _HEAD_END.search(received)) is None:
            if len(received) > MAX_HEAD:
                return self._refuse_malformed("a head over 64 KiB")
            chunk = _receive(connection, deadline)
            if not chunk:
                return None
            received += chunk
        raw, rest = received[: end.end()], received[end.end() :]
        defect = request_defect(raw)
        if defect is not None:
            return self._refuse_malformed(defect)
        parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD + 4)
        parser.receive_data(raw + rest)
        try:
            event = parser.next_event()
        except h11.RemoteProtocolError:
            return self._refuse_malformed("a head HTTP/1.1 does not allow")
        if not isinstance(event, h11.Request) or not event.target.startswith(b"/"):
            return self._refuse_malformed("a request target that is not a path")
        head = RequestHead(
            event.method.decode("ascii"), event.target.decode("latin-1"),
            tuple((name.decode("latin-1"), value.decode("latin-1")) for name, value in event.headers.raw_items()),
        )  # fmt: skip
        if not on_the_wire(head, self.paths):
            with self._lock:
                self._refusals.append(f"{head.method} {head.target.partition('?')[0]}")
            return off_the_wire(self.dialect, head)
        admitted = admit_request(self.dialect, head, self.placeholder)
        if isinstance(admitted, ProxyAnswer):
            if admitted.refused:
                self._count(refused=1)
            return admitted
        if not self._hold(admitted):
            return bodies_held(self.dialect)
        body = _request_body(parser, connection, deadline)
        if body is None or len(body) != admitted:
            with self._lock:
                self._held -= admitted
            return None
        return RouteRequest(head, body)

    def _forward(self, connection: socket.socket, request: RouteRequest) -> None:
        if self._plain:
            answer = _plain_answer(self.upstream, request)
            if answer is None:
                self._answer(connection, bad_gateway(self.dialect, f"the upstream {self.upstream} could not be reached"))
                return
            self._exchange(connection, request, answer)
            return
        if self.custody is None:
            response = self._send(request, None)
            if response is None:
                self._answer(connection, bad_gateway(self.dialect, f"the upstream {self.upstream} could not be reached"))
                return
            self._exchange(connection, request, _httpx_answer(response))
            return
        token = read_custody(self.dialect, self.custody)
        if token is None:
            self._answer(connection, bad_gateway(self.dialect, f"the custody file {self.custody} could not be read"))
            return
        response = self._send(request, token)
        if response is None:
            self._answer(connection, bad_gateway(self.dialect, f"the upstream {self.upstream} could not be reached"))
            return
        self._count(forwarded=1)
        if response.status_code == 401:
            held = self._buffer(response)
            again = read_custody(self.dialect, self.custody)
            if again is not None and retry_after_401(token, again):
                self._count(refresh_and_retry=1)
                retried = self._send(request, again)
                if retried is None:
                    self._answer(connection, bad_gateway(self.dialect, f"the upstream {self.upstream} could not be reached"))
                    return
                self._exchange(connection, request, _httpx_answer(retried))
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
        self._exchange(connection, request, _httpx_answer(response))

    def _exchange(self, connection: socket.socket, request: RouteRequest, answer: UpstreamAnswer) -> None:
        """The one place every forwarded exchange passes: the child's request whole (method, target, its
        headers, the body bytes) and the upstream's answer as relayed to the child (status, the relayed
        headers, each body chunk as it is sent). An observer of the route attaches here. The head is
        flushed at once and each chunk (at most ``RELAY_CHUNK``) as it arrives, so SSE keeps streaming;
        the body is close-delimited or sized by the upstream's own ``Content-Length``."""
        relayed = 0
        relayed = 0
        kept: list[bytes] | None = []
        self._count_route(len(request.body), 0)
        try:
            head = f"HTTP/1.1 {answer.status} {answer.reason}\r\n"
            for key, value in relay_headers(answer.headers):
                head += f"{key}: {value}\r\n"
            connection.sendall(head.encode("latin-1") + b"\r\n")
            for chunk in answer.chunks:
                connection.sendall(chunk)
                relayed += len(chunk)
                self._count_route(0, len(chunk), request=False)
                if kept is not None and relayed <= WITNESS_KEEP:
                    kept.append(chunk)
                else:
                    kept = None
        finally:
            answer.chunks.close()
            encoding = next((value for key, value in answer.headers if key.lower() == "content-encoding"), None)
            sent = inflate(request.body, request.head.header("content-encoding")) or b""  # the results, as upstream reads them
            self._witness(request.head.target, sent, None if kept is None else b"".join(kept), encoding)

    def _send(self, request: RouteRequest, token: str | None) -> httpx.Response | None:
        head, body = request
        headers = (
            verbatim_headers(head, self.upstream, len(body))
            if token is None
            else forward_headers(head, self.upstream, token, len(body))
        )
        self._client_ready.wait()
        built = self._client.build_request(
            head.method, upstream_url(self.upstream, head.target), headers=list(headers), content=body
        )
        try:
            return self._client.send(built, stream=True)
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
