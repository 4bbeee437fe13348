"""The neutral reply a scenario decides, before any wire renders it (docs/loop.md#answer-function, #loop-scenarios,
#vendor-cli-scenarios)."""

from __future__ import annotations

import itertools
from typing import Literal

import msgspec

Effect = Literal["none", "slow", "malformed", "truncated"]


class Call(msgspec.Struct, frozen=True):
    """One tool call: ``arguments`` is the raw argument text (JSON, or anything under
    ``bad-arguments``); ``custom`` makes it a Responses ``custom_tool_call`` whose input is that text;
    ``namespace`` names the Responses tool namespace a function was offered in (Codex's
    ``collaboration``), which the call must name."""

    name: str
    arguments: str
    custom: bool = False
    namespace: str | None = None


class Reasoning(msgspec.Struct, frozen=True):
    """A reasoning item (Responses) or thinking block (Messages): readable summary, opaque blob."""

    summary: str
    blob: str


class Reply(msgspec.Struct, frozen=True, kw_only=True):
    """A successful answer: optional reasoning, text, one call and the ``parallel`` calls after it in the same
    message (on the Messages and Generative Language wires); ``incomplete`` ends it at the output bound; ``usage`` false drops usage;
    ``note`` adds one event no decoder knows; ``effect`` bends the stream (docs/loop.md#loop-scenarios)."""

    text: str = ""
    call: Call | None = None
    parallel: tuple[Call, ...] = ()
    reasoning: Reasoning | None = None
    incomplete: bool = False
    usage: bool = True
    note: bool = False
    effect: Effect = "none"

    @property
    def output_tokens(self) -> int:
        """Fixed usage (docs/loop.md#answer-function): 8 output tokens for a call, 4 for text."""
        return 8 if self.call is not None else 4

    @property
    def text_deltas(self) -> tuple[str, ...]:
        """The text as two deltas cut at ⌊len/2⌋ code points, or eight cut at ⌊k·len/8⌋ when slow."""
        pieces = 8 if self.effect == "slow" else 2
        cuts = [0, *(k * len(self.text) // pieces for k in range(1, pieces)), len(self.text)]
        return tuple(self.text[a:b] for a, b in itertools.pairwise(cuts))


class ProviderError(msgspec.Struct, frozen=True, kw_only=True):
    """A refusal by the provider: an HTTP status with the wire's error body or, when ``streamed`` and
    the request streams, a 200 stream ending in the wire's failure event."""

    status: int
    kind: Literal["authentication", "overloaded", "invalid-request"]
    message: str
    retry_after: str | None = None
    streamed: bool = False


class Ids(msgspec.Struct, frozen=True):
    """Identifiers of one answer (docs/loop.md#answer-function): ``n`` numbers the response, ``call`` (R+1) the call."""

    n: int
    call: int
    model: str

    def response_id(self, prefix: str) -> str:
        return f"{prefix}_b10x_{self.n:03d}"

    def call_id(self, prefix: str) -> str:
        return f"{prefix}_b10x_{self.call:03d}"
