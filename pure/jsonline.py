"""The one JSON serialiser of the project (docs/events.md#serialisation).

``compact`` writes one value as docs/events.md#serialisation bytes: no whitespace, ``,`` and ``:`` separators, the
escaping msgspec and ``json.dumps(ensure_ascii=False)`` share, keys in the order given. ``canonical``
is the same with object keys sorted at every level (frame digests docs/frames.md#2-seal-it, request digests
docs/decisions.md#correlation-and-abandonment).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

_ENCODER = msgspec.json.Encoder()
_SORTED_ENCODER = msgspec.json.Encoder(order="sorted")


compact: Callable[[Any], bytes] = _ENCODER.encode
"""docs/events.md#serialisation bytes of ``value``, keys in the order given (struct fields in declaration order):
the encoder's own method, so the event writer's one encode a line costs no Python call around it."""


def canonical(value: Any) -> bytes:
    """docs/events.md#serialisation bytes of ``value`` with object keys sorted by code point at every level."""
    return _SORTED_ENCODER.encode(value)


def sha256_hex(data: bytes) -> str:
    """Lowercase hex SHA-256 of ``data``. ``hashlib`` (OpenSSL's) is loaded at the first digest, not with the adapter
    values that import this leaf, so the options' stages start without it (docs/DEVELOPING.md#dependency-direction)."""
    import hashlib

    return hashlib.sha256(data).hexdigest()
