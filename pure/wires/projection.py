"""What both wires share above the transport: body bytes, payload decoding, item order errors
(docs/loop.md#model-port)."""

from __future__ import annotations

from typing import Any

import msgspec

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.jsonline import canonical
from metaharness.pure.wires.neutral import Opaque, Sampling, WireError

_DECODER = msgspec.json.Decoder()


def body_bytes(body: dict[str, Any]) -> bytes:
    """Compact JSON, UTF-8 unescaped, keys sorted at every depth, then ``\\n`` (docs/loop.md#model-port)."""
    return canonical(body) + b"\n"


def cross_wire(position: int, item: Opaque, wire: str) -> WireError:
    """The typed refusal to replay another wire's opaque item (docs/loop.md#credentials); ``position`` is 1-based."""
    return WireError(
        "cross-wire", f"item {position} is an opaque `{item.wire}` item and cannot be replayed into `{wire}`"
    )


def sampling_refused(sampling: Sampling, wire: str, temperature_max: int) -> WireError | None:
    """The pre-flight refusal of a temperature outside ``0..temperature_max`` or a ``top_p`` outside ``(0, 1]``
    (docs/loop.md#anthropic-messages, #openai-responses, #generative-language), in that order; ``None`` when both
    are in range or unset."""
    if sampling.temperature is not None and not 0 <= sampling.temperature <= temperature_max:
        return WireError("refused", f"temperature {sampling.temperature} is outside 0..{temperature_max} on {wire}")
    if sampling.top_p is not None and not 0 < sampling.top_p <= 1:
        return WireError("refused", f"top_p {sampling.top_p} is outside (0, 1] on {wire}")
    return None


def decode_payload(data: bytes) -> dict[str, Any] | None:
    """An event payload as a JSON object, or ``None`` when it is not one (nested past ``JSON_DEPTH_LIMIT`` too:
    a model's answer is bounded like every input, docs/cli.md#bounds-on-what-a-run-reads)."""
    try:
        value = decode_bounded(data)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def decode_raw(raw: msgspec.Raw) -> Any:
    """A lazily kept field's JSON value (already validated while the envelope was decoded)."""
    return _DECODER.decode(raw) if raw else None


def parse_arguments(text: str) -> tuple[bool, Any]:
    """A call's argument text: empty is ``{}``; ``(False, None)`` when it is not JSON or nests past
    ``JSON_DEPTH_LIMIT`` (docs/cli.md#bounds-on-what-a-run-reads)."""
    if not text.strip():
        return True, {}
    try:
        return True, decode_bounded(text)
    except msgspec.DecodeError:
        return False, None


def unknown_event(wire: str, event_type: str) -> str:
    """The ``unknown-stream-event`` warning text."""
    return f"{wire} sent the stream event `{event_type}`, which this loop does not know; it was ignored"


def unknown_item(wire: str, item_type: str) -> str:
    """The ``unknown-output-item`` warning text."""
    return f"{wire} answered an output item of type `{item_type}`, which this loop keeps opaque"
