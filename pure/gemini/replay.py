"""``replay gemini RECORD``: a retained stream-json record mapped offline through the live reader and the
correlator (docs/events.md#replay). Every call takes the record path with no warning; nothing is decided, so
the census is zero; no terminal record is invented; ``stream.closed.process`` is unknown."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial

from metaharness.pure.adapter import ReplayOutput, ReplayRequest
from metaharness.pure.correlation import correlated_stream
from metaharness.pure.events import (
    Hermetic,
    Transcript,
    closed_reason,
)
from metaharness.pure.gemini.record import RecordFacts, RecordState, read_record_line
from metaharness.pure.gemini.session import terminal_stop
from metaharness.pure.readings import record_lines


def replay_facts(request: ReplayRequest) -> RecordFacts:
    """``session.started``'s launch facts under replay: ``transcript`` ``{path, null, null}`` and an attestation
    naming only the mode and decisions."""
    hermetic = Hermetic(mode=request.hermetic, decisions=request.attested_decisions, imposed=(), declared=(),
                        unavailable=(), ambient_inputs=(), installed_plugins=())  # fmt: skip
    return RecordFacts(transcript=Transcript(path=request.transcript_path, digest=None, bytes=None),
                       hermetic=hermetic, model=request.model)  # fmt: skip


def replay_record(record: bytes, request: ReplayRequest) -> tuple[bytes, str]:
    """The whole ``metaharness.event/1`` stream of a retained record, and its closing reason."""
    stream = b"".join(replayed_lines(record_lines(record), request))
    return stream, closed_reason(stream)


def replay(lines: Iterable[bytes], request: ReplayRequest) -> Iterator[ReplayOutput]:
    """A retained stream-json record mapped as ``replay`` maps it, line by line."""
    return replayed_lines(lines, request)


def replayed_lines(lines: Iterable[bytes], request: ReplayRequest) -> Iterator[bytes]:
    """Each event line of the stream as the record's lines (terminators removed) are read: the record is never
    held, and each event is yielded once the line that makes it is read."""
    facts = replay_facts(request)
    read = partial(read_record_line, facts=facts)
    return correlated_stream(request.run_id, enumerate(lines, start=1), RecordState(), read, terminal_stop, frozenset())
