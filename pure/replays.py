"""Each kind's pure replay, looked up by kind (docs/events.md#replay): the record readers' registry.

Apart from ``metaharness.pure.adapters`` because a replay imports the kind's record reader, which the
light verbs (``capabilities``) never need; only the verbs that map a record (``replay``, ``project
--from``, ``metaharness-view --from``) import this module. A replay reads the record line by line and
yields each event as soon as the line that makes it is read, so the shell can stream it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import assert_never

from metaharness.pure.adapter import Replayed, ReplayOutput, ReplayRequest, SeamAnswer
from metaharness.pure.b10x.replay import replay as replay_b10x_record
from metaharness.pure.claude.replay import replay as replay_claude_record
from metaharness.pure.codex.replay import replay as replay_codex_record
from metaharness.pure.events import closed_reason
from metaharness.pure.gemini.replay import replay as replay_gemini_record
from metaharness.pure.kind import Kind

Replay = Callable[[Iterable[bytes], ReplayRequest], Iterator[ReplayOutput]]
"""A kind's replay: the record's lines (each without its ``\\n``) in, event lines and seam answers out."""


def replay_of(kind: Kind) -> Replay:
    """The kind's replay: its record mapped as ``metaharness replay`` maps it."""
    match kind:
        case "claude":
            return replay_claude_record
        case "codex":
            return replay_codex_record
        case "b10x":
            return replay_b10x_record
        case "gemini":
            return replay_gemini_record
        case _:
            assert_never(kind)


def record_lines(record: bytes) -> list[bytes]:
    """A whole record's lines, each without its ``\\n``; an unterminated last line is a line."""
    lines = record.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def replay_whole(kind: Kind, record: bytes, request: ReplayRequest) -> Replayed:
    """A whole record replayed at once: its stream, closing reason and seam lines."""
    events: list[bytes] = []
    answers: list[bytes] = []
    for output in replay_of(kind)(record_lines(record), request):
        (answers if isinstance(output, SeamAnswer) else events).append(output.line if isinstance(output, SeamAnswer) else output)
    stream = b"".join(events)
    return Replayed(stream, closed_reason(stream), b"".join(answers))
