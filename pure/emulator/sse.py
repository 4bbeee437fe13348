"""Server-sent-event framing of the emulator (docs/loop.md#answer-function): ``event: <type>\\ndata: <json>\\n\\n``."""

from __future__ import annotations

from typing import Any

from metaharness.pure.jsonline import compact

DONE_FRAME = b"data: [DONE]\n\n"


def sse_frame(payload: dict[str, Any]) -> bytes:
    """One frame naming the payload's ``type`` as its event, the payload as compact JSON data."""
    return b"event: " + str(payload["type"]).encode() + b"\ndata: " + compact(payload) + b"\n\n"


def data_frame(payload: dict[str, Any]) -> bytes:
    """One frame with no event line, as the Generative Language API streams: ``data: <json>\\r\\n\\r\\n``."""
    return b"data: " + compact(payload) + b"\r\n\r\n"
