"""The shared HTTP transport (docs/loop.md#transport, #retry): one model call with its transport retries.

It gets a finished URL, the wire's headers and body and a decoder; it names no vendor and no path.
HTTP lets a server answer a request without ``accept-encoding`` in any content coding, so a gateway may gzip
the stream: bodies are framed after their content coding is undone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

from metaharness.pure.wires.neutral import Outcome, StreamEvent, WireError
from metaharness.pure.wires.retry import (
    final_transport_error,
    may_retry_in_transport,
    parse_retry_after,
    status_error,
    transport_retry_warning,
    transport_wait_ms,
)
from metaharness.pure.wires.sse import SseItem, frame_sse
from metaharness.shell.loop.cancel import CancelToken, Interrupted
from metaharness.shell.loop.http_client import CodingFailure, HttpClient, Response, TransportFailure

Decoder = Callable[[Iterable[SseItem]], Iterator[StreamEvent]]
HeaderSource = Callable[[], "tuple[tuple[str, str], ...] | WireError"]


def make_client(url: str) -> HttpClient:
    """HTTP/1.1 to ``url``'s origin, proxy variables ignored, redirects never followed; TLS verified for an
    ``https`` URL (``shell/loop/http_client.py``)."""
    return HttpClient(url)


class ModelCall:
    """One model call: attempts, backoff, sink delivery; the result is an ``Outcome`` or a ``WireError``."""

    def __init__(
        self,
        client: HttpClient,
        wire: str,
        url: str,
        user_agent: str,
        cancel: CancelToken,
        on_retry: Callable[[str], None],
    ) -> None:
        self.client = client
        self.wire = wire
        self.url = url
        self.user_agent = user_agent
        self.cancel = cancel
        self.on_retry = on_retry

    def run(
        self, headers: HeaderSource, body: bytes, decode: Decoder, sink: Callable[[StreamEvent], None]
    ) -> tuple[Outcome | WireError, bool]:
        """Attempts up to 4 while nothing reached the sink and the error is retriable; also whether output arrived."""
        attempt = 0
        while True:
            attempt += 1
            result, reached = self._attempt(headers, body, decode, sink)
            if isinstance(result, Outcome):
                return result, reached
            if result.error == "cancelled" or self.cancel.stopping():
                return WireError("cancelled", "the caller cancelled"), reached
            if not may_retry_in_transport(result, attempt, reached, self.cancel.stopping()):
                return (result if reached else final_transport_error(result, attempt)), reached
            wait = transport_wait_ms(attempt, result.retry_after_ms)
            self.on_retry(transport_retry_warning(attempt, wait, result.message))
            if not self.cancel.sleep(wait / 1000):
                return WireError("cancelled", "the caller cancelled"), False

    def _attempt(
        self, headers: HeaderSource, body: bytes, decode: Decoder, sink: Callable[[StreamEvent], None]
    ) -> tuple[Outcome | WireError, bool]:
        """One attempt and whether anything reached the sink."""
        reached = [False]

        def deliver(event: StreamEvent) -> None:
            reached[0] = True
            sink(event)

        return self._send(headers, body, decode, deliver), reached[0]

    def _send(
        self, headers: HeaderSource, body: bytes, decode: Decoder, deliver: Callable[[StreamEvent], None]
    ) -> Outcome | WireError:
        built = headers()
        if isinstance(built, WireError):
            return built
        if self.cancel.stopping():
            return WireError("cancelled", "the caller cancelled")
        credential = _credential_in(built)
        headers_sent = (*built, ("user-agent", self.user_agent))
        del built
        try:
            with self.cancel.blocking():
                response = self.client.post(self.url, headers_sent, body)
                try:
                    if not 200 <= response.status_code < 300:
                        head = _read_head(response)
                        retry_after = parse_retry_after(response.header("retry-after"), time.time())
                        error = status_error(self.wire, response.status_code, head, credential, retry_after)
                        return error if error is not None else WireError("protocol", "unreachable status")
                    for event in decode(frame_sse(response.iter_bytes())):
                        if isinstance(event, (Outcome, WireError)):
                            return event
                        deliver(event)
                        if self.cancel.stopping():
                            raise Interrupted
                    return WireError("truncated", f"{self.wire} ended the stream early")
                finally:
                    response.close()
        except Interrupted:
            return WireError("cancelled", "the caller cancelled")
        except CodingFailure as error:
            return WireError("protocol", f"{self.wire} sent a body whose content coding does not decode: {error}")
        except TransportFailure as error:
            text = str(error) or type(error).__name__
            if credential:
                text = text.replace(credential, "[redacted]")
            return WireError("transport", f"{self.wire} could not be reached: {text}")


def _credential_in(headers: tuple[tuple[str, str], ...]) -> str | None:
    for name, value in headers:
        if name == "authorization":
            return value.removeprefix("Bearer ")
        if name == "x-api-key":
            return value
    return None


def _read_head(response: Response) -> bytes:
    head = b""
    for chunk in response.iter_bytes():
        head += chunk
        if len(head) >= 2048:
            break
    return head
