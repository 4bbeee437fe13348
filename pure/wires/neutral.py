"""The neutral values the loop and the wires share (docs/loop.md#model-port).

Items are also the session format. A wire's stream decodes to a sequence of stream events that ends
with exactly one ``Outcome`` or one ``WireError``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from metaharness.pure.jsonline import compact


class UserText(msgspec.Struct, frozen=True, tag_field="kind", tag="user-text"):
    """A user turn's text."""

    text: str


class AssistantText(msgspec.Struct, frozen=True, tag_field="kind", tag="assistant-text"):
    """Text the model answered."""

    text: str


class ToolCall(msgspec.Struct, frozen=True, tag_field="kind", tag="tool-call"):
    """One call the model made; ``arguments`` is the decoded JSON value."""

    call_id: str
    name: str
    arguments: Any


class ToolResult(msgspec.Struct, frozen=True, tag_field="kind", tag="tool-result"):
    """The result item every call gets, run or not."""

    call_id: str
    output: str
    failed: bool


class Opaque(msgspec.Struct, frozen=True, tag_field="kind", tag="opaque"):
    """A wire's own item (reasoning) kept verbatim and replayed through that wire only (docs/loop.md#credentials)."""

    wire: str
    payload: Any


Item = UserText | AssistantText | ToolCall | ToolResult | Opaque


class ToolSpec(msgspec.Struct, frozen=True):
    """A published tool as the model sees it."""

    name: str
    description: str
    schema: Any


class Sampling(msgspec.Struct, frozen=True):
    """Sampling values; each is sent only when set."""

    temperature: float | None = None
    top_p: float | None = None
    effort: str | None = None
    max_output_tokens: int | None = None


class TurnRequest(msgspec.Struct, frozen=True):
    """Everything one model call needs: the whole local conversation (stateless continuation)."""

    model: str
    instruction: str
    items: tuple[Item, ...]
    tools: tuple[ToolSpec, ...]
    sampling: Sampling = Sampling()


class Usage(msgspec.Struct, frozen=True, omit_defaults=True):
    """Neutral usage: ``input_tokens`` includes the cached ones."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_creation_input_tokens: int | None = None


StopKind = Literal["end-turn", "tool-calls", "max-output-tokens", "incomplete"]


class ProviderStop(msgspec.Struct, frozen=True, omit_defaults=True):
    """Why the provider stopped a turn; ``reason`` only for ``incomplete``."""

    kind: StopKind
    reason: str | None = None


class StreamText(msgspec.Struct, frozen=True, tag_field="kind", tag="text"):
    """A text delta."""

    text: str


class StreamReasoning(msgspec.Struct, frozen=True, tag_field="kind", tag="reasoning"):
    """A reasoning delta."""

    text: str


class StreamArguments(msgspec.Struct, frozen=True, tag_field="kind", tag="arguments"):
    """A delta of a call's argument text."""

    call_id: str
    delta: str


class StreamWarning(msgspec.Struct, frozen=True, tag_field="kind", tag="warning"):
    """A decoder warning (``unknown-stream-event``, ``unknown-output-item``, ``provider-refusal``)."""

    code: str
    message: str


class Outcome(msgspec.Struct, frozen=True, tag_field="kind", tag="outcome"):
    """A whole turn: assistant items, the provider's stop, usage when reported, the model."""

    items: tuple[Item, ...]
    stop: ProviderStop
    usage: Usage | None
    model: str


ErrorKind = Literal[
    "unauthorized", "refused", "protocol", "cross-wire", "rate-limited", "transport", "truncated", "cancelled"
]
RETRIABLE: frozenset[str] = frozenset({"rate-limited", "transport", "truncated"})


class WireError(msgspec.Struct, frozen=True, tag_field="kind", tag="error", omit_defaults=True):
    """A typed model-call error (docs/loop.md#model-port); ``retry_after_ms`` only from a ``Retry-After`` header."""

    error: ErrorKind
    message: str
    retry_after_ms: int | None = None

    @property
    def retriable(self) -> bool:
        """Rate-limited, transport and truncated errors may be retried (docs/loop.md#retry)."""
        return self.error in RETRIABLE


StreamEvent = StreamText | StreamReasoning | StreamArguments | StreamWarning | Outcome | WireError


class WireRequest(msgspec.Struct, frozen=True):
    """A projected request: the endpoint path after the base URL and the exact body bytes.

    Headers are built per attempt by the wire's ``request_headers``, since the credential may rotate.
    """

    path: str
    body: bytes


def event_line(event: StreamEvent) -> bytes:
    """One neutral event as a contract line (``stream-*.events.jsonl``)."""
    return compact(event)
