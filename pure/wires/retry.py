"""Status mapping and the two retry policies as pure functions (docs/loop.md#transport, #retry)."""

from __future__ import annotations

import datetime
import re

from metaharness.pure.budgets import RETRY_AFTER_CAP_MS
from metaharness.pure.wires.neutral import WireError

TRANSPORT_ATTEMPTS = 4
LOOP_RETRIES = 3
BODY_EXCERPT = 2048
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_HTTP_DATE = re.compile(r"[A-Z][a-z]{2}, (\d{2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT")
FINAL_SUFFIX = " (after 4 attempts, none of which produced a whole turn)"


def status_error(wire: str, status: int, body: bytes, credential: str | None, retry_after_ms: int | None) -> WireError | None:
    """The typed error of a non-2xx status, ``None`` for 2xx; the credential never reaches the message."""
    if 200 <= status < 300:
        return None
    excerpt = body[:BODY_EXCERPT].decode("utf-8", errors="replace")
    if credential:
        excerpt = excerpt.replace(credential, "[redacted]")
    if 300 <= status < 400:
        return WireError("refused", f"{wire} answered {status}: redirects are not followed")
    message = f"{wire} answered {status}: {excerpt}"
    if status in (401, 403):
        return WireError("unauthorized", message)
    if status == 429:
        return WireError("rate-limited", message, retry_after_ms)
    if status == 408 or status >= 500:
        return WireError("transport", message, retry_after_ms)
    return WireError("refused", message)


def parse_retry_after(value: str | None, now_unix: float) -> int | None:
    """``Retry-After`` as milliseconds: delta seconds or an IMF-fixdate HTTP date; ``None`` when absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return int(text) * 1000
    match = _HTTP_DATE.fullmatch(text)
    if match is None:
        return None
    day, month, year, hour, minute, second = match.groups()
    try:
        moment = datetime.datetime(
            int(year), _MONTHS.index(month) + 1, int(day), int(hour), int(minute), int(second), tzinfo=datetime.UTC
        )
    except ValueError:
        return None
    return max(int((moment.timestamp() - now_unix) * 1000), 0)


def transport_wait_ms(failed_attempt: int, retry_after_ms: int | None) -> int:
    """Wait before attempt ``failed_attempt + 1``: 500 ms·2ⁿ, raised to a capped ``Retry-After``."""
    backoff = int(500 * 2**failed_attempt)
    if retry_after_ms is None:
        return backoff
    return max(backoff, min(retry_after_ms, RETRY_AFTER_CAP_MS))


def transport_retry_warning(failed_attempt: int, wait_ms: int, reason: str) -> str:
    """The ``turn-retried`` warning text of a transport retry."""
    return (
        f"attempt {failed_attempt} of {TRANSPORT_ATTEMPTS} failed before answering and is being retried "
        f"after {wait_ms} ms: {reason}"
    )


def loop_pause_ms(retry: int) -> int:
    """The cancellable pause after loop retry ``retry`` (1-based): 0.5, 1, 2 s."""
    return int(500 * 2 ** (retry - 1))


def may_retry_in_transport(error: WireError, attempt: int, reached_sink: bool, cancelled: bool) -> bool:
    """A transport retry: retriable, nothing reached the sink, attempts left, not cancelled."""
    return error.retriable and not reached_sink and attempt < TRANSPORT_ATTEMPTS and not cancelled


def may_retry_in_loop(error: WireError, reached_sink: bool, retries: int) -> bool:
    """A loop retry: a retriable error after output, fewer than 3 retries so far (docs/loop.md#retry)."""
    return error.retriable and reached_sink and retries < LOOP_RETRIES


def final_transport_error(error: WireError, attempt: int) -> WireError:
    """The fourth failure is final, suffixed."""
    if attempt >= TRANSPORT_ATTEMPTS and error.retriable:
        return WireError(error.error, error.message + FINAL_SUFFIX)
    return error
