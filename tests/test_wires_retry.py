"""Status mapping and the two retry policies (docs/loop.md#transport, #retry)."""

from __future__ import annotations

from metaharness.pure.wires.neutral import WireError
from metaharness.pure.wires.retry import (
    final_transport_error,
    loop_pause_ms,
    may_retry_in_loop,
    may_retry_in_transport,
    parse_retry_after,
    status_error,
    transport_retry_warning,
    transport_wait_ms,
)


def test_status_mapping() -> None:
    assert status_error("w", 200, b"", None, None) is None
    assert status_error("w", 401, b"no", None, None) == WireError("unauthorized", "w answered 401: no")
    assert status_error("w", 403, b"", None, None).error == "unauthorized"  # type: ignore[union-attr]
    assert status_error("w", 429, b"slow", None, 5000) == WireError("rate-limited", "w answered 429: slow", 5000)
    assert status_error("w", 408, b"", None, None).error == "transport"  # type: ignore[union-attr]
    assert status_error("w", 503, b"", None, None).error == "transport"  # type: ignore[union-attr]
    assert status_error("w", 400, b"bad", None, None) == WireError("refused", "w answered 400: bad")
    assert status_error("w", 302, b"", None, None) == WireError("refused", "w answered 302: redirects are not followed")


def test_the_body_excerpt_is_bounded_and_the_credential_redacted() -> None:
    error = status_error("w", 401, b"key sk-123 " + b"x" * 5000, "sk-123", None)
    assert error is not None and "sk-123" not in error.message and "[redacted]" in error.message
    assert len(error.message) < 2100


def test_retry_after() -> None:
    assert parse_retry_after("5", 0) == 5000
    assert parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111770) == 7000
    assert parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111790) == 0
    assert parse_retry_after("soon", 0) is None
    assert parse_retry_after(None, 0) is None


def test_transport_backoff_and_cap() -> None:
    assert [transport_wait_ms(n, None) for n in (1, 2, 3)] == [1000, 2000, 4000]
    assert transport_wait_ms(1, 5000) == 5000
    assert transport_wait_ms(3, 0) == 4000
    assert transport_wait_ms(1, 90_000) == 30_000
    assert transport_retry_warning(2, 2000, "boom") == (
        "attempt 2 of 4 failed before answering and is being retried after 2000 ms: boom"
    )


def test_who_retries() -> None:
    truncated = WireError("truncated", "cut")
    refused = WireError("refused", "no")
    assert may_retry_in_transport(truncated, 3, False, False)
    assert not may_retry_in_transport(truncated, 4, False, False)
    assert not may_retry_in_transport(truncated, 1, True, False)
    assert not may_retry_in_transport(truncated, 1, False, True)
    assert not may_retry_in_transport(refused, 1, False, False)
    assert may_retry_in_loop(truncated, True, 2) and not may_retry_in_loop(truncated, True, 3)
    assert not may_retry_in_loop(truncated, False, 0) and not may_retry_in_loop(refused, True, 0)
    assert [loop_pause_ms(n) for n in (1, 2, 3)] == [500, 1000, 2000]
    assert final_transport_error(truncated, 4).message == (
        "cut (after 4 attempts, none of which produced a whole turn)"
    )
    assert final_transport_error(refused, 1) == refused
