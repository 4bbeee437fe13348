"""The loopback credential proxy's decisions, kind-agnostic (docs/adapters/common.md#loopback-proxy,
docs/hermetic.md#credentials).

The child holds a per-run placeholder; the proxy on ``127.0.0.1`` checks it, swaps in the real token
read per request from custody and forwards to the upstream. This module decides everything that does
not touch a socket or a file: the placeholder's spelling, reading a request head, whether a request
is admitted, the forwarded and relayed header lists, the proxy's own answers in the vendor's shape,
the counters and their ``LOOPBACK_REFUSED`` warning. The shell's loopback proxy runs it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import msgspec

from metaharness.pure.adapter import Loopback
from metaharness.pure.events import AuthExpired, WarningRaised

Headers = tuple[tuple[str, str], ...]

MAX_BODY = 32 * 1024 * 1024
"""A request body over 32 MiB is answered 413 (docs/adapters/common.md#endpoint-route, design choice)."""
MAX_HEAD = 64 * 1024
"""A request head (request line and headers) over 64 KiB is answered 400 as malformed: no wire request
needs more, and the proxy holds no more than this of a head (docs/adapters/common.md#route-bounds)."""
MAX_CONNECTIONS = 16
"""Connections the route proxy serves at once, each on its own thread; the next one is answered 503 at
once and closed, so the proxy's threads and memory stay flat however many a child opens
(docs/adapters/common.md#route-bounds). A harness keeps a handful open; 16 leaves room for its bursts."""
MAX_HELD_BODIES = 2 * MAX_BODY
"""Request bytes the route proxy holds at once over all its connections (a body is held whole until
its exchange ends: a 401 under custody is retried with it); a request that would pass it is answered
503 before its body is read, so memory stays flat in connections and bytes
(docs/adapters/common.md#route-bounds). Two bodies of the largest size fit."""
MAX_RETRY_BODY = 1024 * 1024
"""An upstream 401 body is buffered up to 1 MiB before the retry decision (docs/adapters/common.md#endpoint-route)."""
RELAY_CHUNK = 16 * 1024
"""The response body is relayed in flushed chunks of at most 16 KiB, never parsed
(docs/adapters/common.md#endpoint-route)."""
SYMBOLIC_PORT = "00000"
"""The port a loopback launch is planned and measured with before the proxy listens
(docs/hermetic.md#refusal-order stage 8)."""

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
     "transfer-encoding", "upgrade", "proxy-connection"}
)  # fmt: skip
_DROPPED_ON_FORWARD = frozenset({"host", "content-length", "authorization", "x-api-key", "x-goog-api-key", "accept-encoding"})
WITNESS_CODINGS = "gzip, deflate"
"""The ``Accept-Encoding`` every forwarded request carries in place of the child's: the codings the route witness
undoes (docs/adapters/common.md#loopback-proxy), so no request can ask upstream for an answer it cannot read."""
GOOGLE_KEY_HEADER = "x-goog-api-key"
"""The Generative Language API's key header: a child that sent its placeholder there gets the token there."""
_UNSAFE_RUN_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]")


def loopback_placeholder(run_id: str, random_bytes: bytes) -> str:
    """``mh-run-<run id, characters outside [A-Za-z0-9_-] → ->-<24 hex from 12 random bytes>``
    (docs/hermetic.md#credentials)."""
    return f"mh-run-{_UNSAFE_RUN_CHARACTERS.sub('-', run_id)}-{random_bytes.hex()}"


def upstream_root(dialect: Loopback, endpoint: str | None) -> str:
    """The endpoint root (trailing ``/`` removed) when one was given, else the vendor's API
    (docs/adapters/common.md#endpoint-route)."""
    return endpoint.rstrip("/") if endpoint else dialect.upstream


class RequestHead(msgspec.Struct, frozen=True):
    """A parsed request head: method, target (path and query, kept), and headers in received order."""

    method: str
    target: str
    headers: Headers

    def header(self, name: str) -> str | None:
        """The first value of ``name`` (case-insensitive), or ``None``."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


class ProxyAnswer(msgspec.Struct, frozen=True):
    """An answer the proxy gives itself, forwarding nothing: status, reason phrase and body."""

    status: int
    phrase: str
    body: bytes

    @property
    def refused(self) -> bool:
        """A 401 for a missing or wrong placeholder counts toward ``refused``."""
        return self.status == 401


_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def _head_lines(raw: bytes) -> list[bytes] | str:
    """The head's lines (the request line first), or why its framing is refused: each line must end in
    CRLF, with no bare CR or LF and no NUL anywhere, and no line folded onto the one before."""
    lines = raw.removesuffix(b"\r\n\r\n").split(b"\r\n")
    if not raw.endswith(b"\r\n\r\n") or any(b"\r" in line or b"\n" in line for line in lines):
        return "a bare CR or LF in the head"
    if b"\0" in raw:
        return "a NUL in the head"
    if any(line[:1] in (b" ", b"\t") for line in lines):
        return "a folded header line"
    return lines


def request_defect(raw: bytes) -> str | None:
    """Why a request head (through its empty line) is refused before any parser reads it, or ``None``:
    a framing fault of :func:`_head_lines`, a header name that is no token, more than one
    ``Content-Length``, or ``Transfer-Encoding`` beside ``Content-Length`` — the shapes by which one
    request could be read as two (docs/adapters/common.md#route-bounds)."""
    lines = _head_lines(raw)
    if isinstance(lines, str):
        return lines
    names = [line.partition(b":")[0] for line in lines[1:]]
    if any(_TOKEN.fullmatch(name) is None for name in names):
        return "a header name that is not a token"
    folded = [name.lower() for name in names]
    if folded.count(b"content-length") > 1:
        return "more than one Content-Length"
    if b"content-length" in folded and b"transfer-encoding" in folded:
        return "Transfer-Encoding with Content-Length"
    return None


def _error_body(dialect: Loopback, error_type: str, message: str, code: str | None = None) -> bytes:
    return dialect.error_body(error_type, message, code)


def refusal_401(dialect: Loopback) -> ProxyAnswer:
    """The proxy's own 401 in the vendor's shape (docs/adapters/common.md#endpoint-route): claude
    ``authentication_error``, codex ``invalid_request_error``/``invalid_api_key``."""
    message = "the request did not carry this run's loopback placeholder, so metaharness forwarded nothing"
    error_type, code = dialect.unauthorized
    return ProxyAnswer(401, "Unauthorized", _error_body(dialect, error_type, message, code))


def bad_gateway(dialect: Loopback, why: str) -> ProxyAnswer:
    """502 ``api_error`` for a custody failure or an unreachable upstream (docs/adapters/common.md#endpoint-route)."""
    return ProxyAnswer(502, "Bad Gateway", _error_body(dialect, "api_error", f"metaharness's loopback proxy: {why}", "api_error"))


def malformed_request(dialect: Loopback, defect: str) -> ProxyAnswer:
    """The proxy's own 400 for a head it will not parse; nothing was sent upstream
    (docs/adapters/common.md#route-bounds)."""
    message = f"metaharness's route proxy forwards no malformed request, and this one has {defect}"
    return ProxyAnswer(400, "Bad Request", _error_body(dialect, "invalid_request_error", message, "malformed_request"))


TURNED_AWAY = f"a connection past {MAX_CONNECTIONS} at once"
"""How ``ROUTE_REFUSED`` names a connection answered :func:`turned_away`."""
BODIES_HELD = f"a request past {MAX_HELD_BODIES // (1024 * 1024)} MiB of bodies held at once"
"""How ``ROUTE_REFUSED`` names a request answered :func:`bodies_held`."""


def malformed_named(defect: str) -> str:
    """How ``ROUTE_REFUSED`` names a request answered :func:`malformed_request`."""
    return f"a malformed request ({defect})"


def _busy(dialect: Loopback, bound: str) -> ProxyAnswer:
    message = f"metaharness's route proxy holds at most {bound}; retry when one has been answered"
    return ProxyAnswer(503, "Service Unavailable", _error_body(dialect, "overloaded_error", message, "route_busy"))


def turned_away(dialect: Loopback) -> ProxyAnswer:
    """The proxy's own 503 for a connection past ``MAX_CONNECTIONS`` (docs/adapters/common.md#route-bounds)."""
    return _busy(dialect, f"{MAX_CONNECTIONS} connections at once")


def bodies_held(dialect: Loopback) -> ProxyAnswer:
    """The proxy's own 503 for a request whose body would pass ``MAX_HELD_BODIES``
    (docs/adapters/common.md#route-bounds)."""
    return _busy(dialect, f"{MAX_HELD_BODIES // (1024 * 1024)} MiB of request bodies at once")


def admit_request(dialect: Loopback, head: RequestHead, placeholder: str | None) -> ProxyAnswer | int:
    """The request's body length, or the proxy's own answer: a chunked body → 400; over 32 MiB → 413;
    under loopback (a ``placeholder``) no placeholder as ``Authorization: Bearer`` or ``x-api-key``
    (constant-time compare) → 401."""
    encoding = head.header("transfer-encoding")
    if encoding is not None and "chunked" in encoding.lower():
        message = "a chunked request body is not forwarded; send it with a Content-Length"
        return ProxyAnswer(400, "Bad Request", _error_body(dialect, "invalid_request_error", message, "chunked_body"))
    length_text = head.header("content-length") or "0"
    if not length_text.isdigit():
        message = "the Content-Length is not a number"
        return ProxyAnswer(400, "Bad Request", _error_body(dialect, "invalid_request_error", message, "bad_length"))
    length = int(length_text)
    if length > MAX_BODY:
        message = "the request body is over 32 MiB"
        return ProxyAnswer(413, "Payload Too Large", _error_body(dialect, "request_too_large", message, "too_large"))
    if placeholder is not None and not carries_placeholder(head, placeholder):
        return refusal_401(dialect)
    return length


def carries_placeholder(head: RequestHead, placeholder: str) -> bool:
    """Whether ``Authorization: Bearer <placeholder>``, ``x-api-key: <placeholder>`` or ``x-goog-api-key:
    <placeholder>`` arrived, compared in constant time. ``hmac`` (and OpenSSL's ``hashlib`` with it) is loaded at the
    first request, not with the launch path before the spawn (docs/DEVELOPING.md#dependency-direction)."""
    import hmac

    expected = placeholder.encode()
    bearer = head.header("authorization")
    offered = [bearer[len("Bearer ") :]] if bearer is not None and bearer.startswith("Bearer ") else []
    offered += [key for key in (head.header("x-api-key"), head.header(GOOGLE_KEY_HEADER)) if key is not None]
    return any(hmac.compare_digest(value.encode("latin-1", "replace"), expected) for value in offered)


def _connection_named(headers: Headers) -> frozenset[str]:
    named = [value for key, value in headers if key.lower() == "connection"]
    return frozenset(token.strip().lower() for value in named for token in value.split(",") if token.strip())


def forward_headers(head: RequestHead, upstream: str, token: str, body_length: int) -> Headers:
    """The headers sent upstream (docs/adapters/common.md#endpoint-route): hop-by-hop, ``Host``, ``Content-Length``,
    ``Authorization``, ``x-api-key``, ``x-goog-api-key`` and ``Accept-Encoding`` dropped; ``Host``, the token (``Authorization: Bearer
    <token>``, or ``x-goog-api-key: <token>`` when the child sent its placeholder in that header),
    ``Accept-Encoding: gzip, deflate``, the recomputed ``Content-Length`` and ``Connection: close`` set; everything else (``anthropic-version``,
    ``anthropic-beta``) passed through in order."""
    dropped = HOP_BY_HOP | _DROPPED_ON_FORWARD | _connection_named(head.headers)
    kept = tuple((key, value) for key, value in head.headers if key.lower() not in dropped)
    host = urlsplit(upstream).netloc
    credential = (GOOGLE_KEY_HEADER, token) if head.header(GOOGLE_KEY_HEADER) is not None else (
        "Authorization", f"Bearer {token}")
    return (
        ("Host", host),
        *kept,
        credential,
        ("Accept-Encoding", WITNESS_CODINGS),
        ("Content-Length", str(body_length)),
        ("Connection", "close"),
    )


def relay_headers(headers: Sequence[tuple[str, str]]) -> Headers:
    """The upstream response's headers relayed to the child: hop-by-hop dropped, ``Connection: close``
    set, so the body is close-delimited or sized by its own ``Content-Length``."""
    dropped = HOP_BY_HOP | _connection_named(tuple(headers))
    return (*((key, value) for key, value in headers if key.lower() not in dropped), ("Connection", "close"))


def upstream_url(upstream: str, target: str) -> str:
    """The upstream URL for a request target: the root plus the path and query, kept as sent."""
    return upstream.rstrip("/") + target


class LoopbackCounters(msgspec.Struct, frozen=True):
    """``{forwarded, refused, refresh_and_retry, refresh_failed}``, retained as ``loopback.json``
    (docs/adapters/common.md#endpoint-route)."""

    forwarded: int = 0
    refused: int = 0
    refresh_and_retry: int = 0
    refresh_failed: int = 0


def retry_after_401(token_sent: str, token_now: str | None) -> bool:
    """After an upstream 401 custody is read again: a changed token is retried once; a missing or
    byte-identical one relays the 401 (docs/adapters/common.md#endpoint-route)."""
    import hmac

    return token_now is not None and not hmac.compare_digest(token_now.encode(), token_sent.encode())


def loopback_expired(detail: str) -> AuthExpired:
    """The one ``auth.expired`` a run emits when the upstream refused an unchanged token
    (docs/adapters/common.md#endpoint-route)."""
    return AuthExpired(credential_source="loopback", detail=detail, source_line=None)


def loopback_refused(counters: LoopbackCounters) -> WarningRaised | None:
    """``LOOPBACK_REFUSED`` at wind-up when the proxy refused at least one request
    (docs/adapters/common.md#endpoint-route)."""
    if counters.refused == 0:
        return None
    return WarningRaised(
        code="LOOPBACK_REFUSED",
        message=f"the loopback credential proxy refused {counters.refused} request(s) that did not carry this run's "
        "placeholder, and forwarded none of them",
    )


def on_the_wire(head: RequestHead, paths: Sequence[str]) -> bool:
    """Whether a request is the wire's own: ``POST`` to one of ``paths`` (the query is not compared)."""
    return head.method == "POST" and head.target.partition("?")[0] in paths


def off_the_wire(dialect: Loopback, head: RequestHead) -> ProxyAnswer:
    """The route proxy's 403 for a request that is not the wire's: nothing was sent upstream."""
    path = head.target.partition("?")[0]
    message = f"metaharness's route proxy forwards only the wire's own requests, and {head.method} {path} is not one"
    return ProxyAnswer(403, "Forbidden", _error_body(dialect, "permission_error", message, "route_refused"))


def verbatim_headers(head: RequestHead, upstream: str, body_length: int) -> Headers:
    """The headers a verbatim route sends upstream: the child's own, hop-by-hop dropped, ``Host``,
    ``Content-Length``, ``Accept-Encoding: gzip, deflate`` and ``Connection: close`` set; credentials the child holds
    pass unchanged."""
    dropped = HOP_BY_HOP | frozenset({"host", "content-length", "accept-encoding"}) | _connection_named(head.headers)
    kept = tuple((key, value) for key, value in head.headers if key.lower() not in dropped)
    return (("Host", urlsplit(upstream).netloc), *kept, ("Accept-Encoding", WITNESS_CODINGS),
            ("Content-Length", str(body_length)), ("Connection", "close"))  # fmt: skip


def route_refused(refused: Sequence[str]) -> WarningRaised | None:
    """``ROUTE_REFUSED`` at wind-up naming each refusal once, in first-seen order: ``METHOD path`` off the
    wire, ``a malformed request (<defect>)``, ``a connection past 16 at once``, ``a request past 64 MiB of
    bodies held at once``."""
    if not refused:
        return None
    named = ", ".join(dict.fromkeys(refused))
    return WarningRaised(
        code="ROUTE_REFUSED",
        message=f"the route proxy refused requests that are not the model wire's and sent none upstream: {named}",
    )
