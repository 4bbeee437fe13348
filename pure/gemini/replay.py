"""``replay gemini RECORD``: a retained stream-json record mapped offline through the live reader and the
correlator (docs/events.md#replay). Every call takes the record path with no warning; nothing is decided, so
the census is zero; no terminal record is invented; ``stream.closed.process`` is unknown."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from metaharness.pure.adapter import ReplayOutput, ReplayRequest
from metaharness.pure.correlation import Correlator, on_readings, on_stream_end
from metaharness.pure.events import (
    Hermetic,
    SessionEnded,
    Stream,
    Transcript,
    closed_reason,
    drained,
    replay_ending,
)
from metaharness.pure.gemini.record import RecordFacts, RecordState, read_record_line
from metaharness.pure.gemini.session import terminal_stop
from metaharness.pure.readings import replay_written
from metaharness.pure.run_stages import closing_reason


def replay_facts(request: ReplayRequest) -> RecordFacts:
    """``session.started``'s launch facts under replay: ``transcript`` ``{path, null, null}`` and an attestation
    naming only the mode and decisions."""
    hermetic = Hermetic(mode=request.hermetic, decisions=request.attested_decisions, imposed=(), declared=(),
                        unavailable=(), ambient_inputs=(), installed_plugins=())  # fmt: skip
    return RecordFacts(transcript=Transcript(path=request.transcript_path, digest=None, bytes=None),
                       hermetic=hermetic, model=request.model)  # fmt: skip


def replay_record(record: bytes, request: ReplayRequest) -> tuple[bytes, str]:
    """The whole ``metaharness.event/1`` stream of a retained record, and its closing reason."""
    lines = record.split(b"\n")
    stream = b"".join(replayed_lines(lines[:-1] if lines and lines[-1] == b"" else lines, request))
    return stream, closed_reason(stream)


def replay(lines: Iterable[bytes], request: ReplayRequest) -> Iterator[ReplayOutput]:
    """A retained stream-json record mapped as ``replay`` maps it, line by line."""
    return replayed_lines(lines, request)


def replayed_lines(lines: Iterable[bytes], request: ReplayRequest) -> Iterator[bytes]:
    """Each event line of the stream as the record's lines (terminators removed) are read: the record is never
    held, and each event is yielded once the line that makes it is read."""
    facts = replay_facts(request)
    stream = Stream(request.run_id)
    state = RecordState()
    correlator = Correlator(live=False)
    out = bytearray()
    ended: SessionEnded | None = None
    for number, raw in enumerate(lines, start=1):
        state, readings = read_record_line(state, raw.removesuffix(b"\r"), number, facts)
        correlator, outputs = on_readings(correlator, readings)
        stream, seen = replay_written(stream, outputs, out)
        ended = ended or seen
        yield from drained(out)
    correlator, outputs = on_stream_end(correlator)
    stream, seen = replay_written(stream, outputs, out)
    ended = ended or seen
    yield from drained(out)
    yield replay_ending(stream, closing_reason(halted=False, killed=False, stop=terminal_stop(ended), budget_stops=frozenset()))
