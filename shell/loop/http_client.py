"""The loop's HTTP/1.1 client (docs/loop.md#transport): one POST per connection to the provider, spoken with
``h11`` over a socket so a run's loop starts without importing a general HTTP client.

Proxy variables are never read and redirects never followed (a 3xx is a status like another); an ``https``
URL is verified against the system trust store (``ssl``, imported only then). The request carries the headers
it is given and only ``host`` and ``content-length`` besides. The body is handed on with its content coding
(``gzip``, ``deflate``, a list of them) undone, so the SSE framing never sees compressed bytes.
"""

from __future__ import annotations

import socket
import zlib
from collections.abc import Iterator, Sequence
from typing import Protocol
from urllib.parse import urlsplit

import h11

from metaharness.pure.budgets import LOOP_CONNECT_S, LOOP_READ_S

CHUNK = 65536


class TransportFailure(Exception):
    """The provider could not be reached, stopped answering within the read timeout, or spoke no HTTP/1.1."""


class CodingFailure(Exception):
    """The body's content coding does not decode, or is not one this client undoes."""


class _Decoder(Protocol):
    def decode(self, data: bytes) -> bytes: ...

    def flush(self) -> bytes: ...


class _Zlib:
    """``gzip`` (``wbits`` with the gzip header) or ``deflate``: zlib-wrapped as the RFC says, raw as some
    servers send it (the first chunk decides)."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._first = True
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)

    def decode(self, data: bytes) -> bytes:
        first, self._first = self._first, False
        try:
            return self._inflate.decompress(data)
        except zlib.error as error:
            if self._gzip or not first:
                raise CodingFailure(str(error)) from None
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.decode(data)

    def flush(self) -> bytes:
        try:
            return self._inflate.flush()
        except zlib.error as error:
            raise CodingFailure(str(error)) from None


def _decoders(coding: str | None) -> tuple[_Decoder, ...]:
    """The decoders of a ``content-encoding`` value, in the order they are applied (the last coding first)."""
    decoders: list[_Decoder] = []
    for name in reversed([part.strip().lower() for part in (coding or "").split(",")]):
        if name in ("", "identity"):
            continue
        if name not in ("gzip", "x-gzip", "deflate"):
            raise CodingFailure(f"content coding {name!r} is not one this client undoes")
        decoders.append(_Zlib(gzip=name != "deflate"))
    return tuple(decoders)


class Response:
    """A response's status and headers; its body, decoded, from ``iter_bytes`` until ``close``."""

    def __init__(self, connection: socket.socket, state: h11.Connection, head: h11.Response) -> None:
        self._connection = connection
        self._state = state
        self.status_code: int = head.status_code
        self._headers = tuple(
            (bytes(name).decode("latin-1"), bytes(value).decode("latin-1")) for name, value in head.headers
        )

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (lower case), or ``None``."""
        return next((value for key, value in self._headers if key == name), None)

    def iter_bytes(self) -> Iterator[bytes]:
        """The body as it arrives, its content coding undone."""
        decoders = _decoders(self.header("content-encoding"))
        for chunk in _body(self._connection, self._state):
            for decoder in decoders:
                chunk = decoder.decode(chunk)
            if chunk:
                yield chunk
        tail = b""
        for decoder in decoders:
            tail = decoder.decode(tail) + decoder.flush()
        if tail:
            yield tail

    def close(self) -> None:
        """Close the connection (one request per connection)."""
        self._connection.close()


def _receive(connection: socket.socket) -> bytes:
    try:
        return connection.recv(CHUNK)
    except OSError as error:
        raise TransportFailure(str(error) or type(error).__name__) from None


def _next_event(connection: socket.socket, state: h11.Connection) -> object:
    """The next HTTP event, reading from the socket as h11 needs; a malformed answer is a transport failure."""
    while True:
        try:
            event = state.next_event()
        except h11.RemoteProtocolError as error:
            raise TransportFailure(str(error)) from None
        if event is not h11.NEED_DATA:
            return event
        data = _receive(connection)
        if not data and state.their_state is h11.SEND_RESPONSE:
            raise TransportFailure("the server closed the connection without sending a response")
        state.receive_data(data)


def _body(connection: socket.socket, state: h11.Connection) -> Iterator[bytes]:
    while True:
        event = _next_event(connection, state)
        if isinstance(event, h11.Data):
            yield bytes(event.data)
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            return


class HttpClient:
    """POSTs to one provider's URLs; each request on a connection of its own, closed with its response."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._tls = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._tls else 80)
        self._authority = parts.netloc.rpartition("@")[2]

    def post(self, url: str, headers: Sequence[tuple[str, str]], body: bytes) -> Response:
        """Send ``body`` to ``url`` with ``headers`` (then ``host`` and ``content-length``); the response's head read."""
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        state = h11.Connection(h11.CLIENT)
        fields = [("host", self._authority), *headers, ("content-length", str(len(body)))]
        connection = self._connect()
        try:
            try:
                request = state.send(h11.Request(method="POST", target=target, headers=fields)) or b""
                connection.sendall(
                    request + (state.send(h11.Data(data=body)) or b"") + (state.send(h11.EndOfMessage()) or b"")
                )
            except OSError as error:
                raise TransportFailure(str(error) or type(error).__name__) from None
            while not isinstance(event := _next_event(connection, state), h11.Response):
                pass  # an informational (1xx) answer: the response follows
            return Response(connection, state, event)
        except BaseException:
            connection.close()
            raise

    def close(self) -> None:
        """Nothing is kept between requests."""

    def _connect(self) -> socket.socket:
        try:
            connection = socket.create_connection((self._host, self._port), timeout=LOOP_CONNECT_S)
        except OSError as error:
            raise TransportFailure(str(error) or type(error).__name__) from None
        connection.settimeout(LOOP_READ_S)
        if not self._tls:
            return connection
        import ssl

        try:
            return ssl.create_default_context().wrap_socket(connection, server_hostname=self._host)
        except OSError as error:
            connection.close()
            raise TransportFailure(str(error) or type(error).__name__) from None
