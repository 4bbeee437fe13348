"""What both wires share above the transport: body bytes, payload decoding, item order errors
(docs/loop.md#model-port)."""

from __future__ import annotations

from typing import Any

import msgspec

from metaharness.pure.jsonline import canonical
from metaharness.pure.wires.neutral import Opaque, WireError

_DECODER = msgspec.json.Decoder()


def body_bytes(body: dict[str, Any]) -> bytes:
    """Compact JSON, UTF-8 unescaped, keys sorted at every depth, then ``\\n`` (docs/loop.md#model-port)."""
    return canonical(body) + b"\n"


def cross_wire(position: int, item: Opaque, wire: str) -> WireError:
    """The typed refusal to replay another wire's opaque item (docs/loop.md#credentials); ``position`` is 1-based."""
    return WireError(
        "cross-wire", f"item {position} is an opaque `{item.wire}` item and cannot be replayed into `{wire}`"
    )


def decode_payload(data: bytes) -> dict[str, Any] | None:
    """An event payload as a JSON object, or ``None`` when it is not one."""
    try:
        value = _DECODER.decode(data)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def decode_raw(raw: msgspec.Raw) -> Any:
    """A lazily kept field's JSON value (already validated while the envelope was decoded)."""
    return _DECODER.decode(raw) if raw else None


def parse_arguments(text: str) -> tuple[bool, Any]:
    """A call's argument text: empty is ``{}``; ``(False, None)`` when it is not JSON."""
    if not text.strip():
        return True, {}
    try:
        return True, _DECODER.decode(text)
    except msgspec.DecodeError:
        return False, None


def unknown_event(wire: str, event_type: str) -> str:
    """The ``unknown-stream-event`` warning text."""
    return f"{wire} sent the stream event `{event_type}`, which this loop does not know; it was ignored"


def unknown_item(wire: str, item_type: str) -> str:
    """The ``unknown-output-item`` warning text."""
    return f"{wire} answered an output item of type `{item_type}`, which this loop keeps opaque"
