"""Each kind's pure replay, looked up by kind (docs/events.md#replay): the record readers' registry.

Apart from ``metaharness.pure.adapters`` because a replay imports the kind's record reader, which the
light verbs (``capabilities``) never need; only the verbs that map a record (``replay``, ``project
--from``, ``metaharness-view --from``) import this module."""

from __future__ import annotations

from collections.abc import Callable
from typing import assert_never

from metaharness.pure.adapter import Replayed, ReplayRequest
from metaharness.pure.b10x.replay import replay as replay_b10x_record
from metaharness.pure.claude.replay import replay as replay_claude_record
from metaharness.pure.codex.replay import replay as replay_codex_record
from metaharness.pure.kind import Kind


def replay_of(kind: Kind) -> Callable[[bytes, ReplayRequest], Replayed]:
    """The kind's replay: its record mapped as ``metaharness replay`` maps it."""
    match kind:
        case "claude":
            return replay_claude_record
        case "codex":
            return replay_codex_record
        case "b10x":
            return replay_b10x_record
        case _:
            assert_never(kind)
