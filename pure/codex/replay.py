"""``replay codex RECORD``: a retained rollout mapped offline through the live reader and correlator
(docs/events.md#replay, docs/adapters/common.md#one-event-per-call). Every call takes the record path with no warning;
nothing is decided, so the census is zero; no terminal record is invented.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from metaharness.pure.adapter import ReplayOutput, ReplayRequest
from metaharness.pure.census import ZERO_CENSUS
from metaharness.pure.codex.rollout import RolloutLaunch, RolloutReader, read_rollout_line, session_ended
from metaharness.pure.codex.vendor import PINS, PROGRAM
from metaharness.pure.correlation import Correlator, on_readings, on_stream_end
from metaharness.pure.events import (
    Hermetic,
    SessionEnded,
    Stream,
    Transcript,
    closed_reason,
    drained,
)
from metaharness.pure.readings import Emitted, record_lines
from metaharness.pure.run_stages import closing_reason
from metaharness.pure.stream_writer import replay_ending, written_line


def replay_launch(
    *, decisions: str, hermetic: str, transcript_path: str, frame_digest: str | None = None
) -> RolloutLaunch:
    """What a replay contributes to the events (docs/events.md#replay): ``transcript`` ``{path, null, null}``
    and the empty attestation with the replay's ``--hermetic`` and ``--decisions``."""
    return RolloutLaunch(
        program=PROGRAM,
        pins=PINS,
        transcript=Transcript(path=transcript_path, digest=None, bytes=None),
        hermetic=Hermetic(
            mode="on" if hermetic == "on" else "strict" if hermetic == "strict" else "off",
            decisions="frame" if decisions == "frame" else "observe",
            imposed=(),
            declared=(),
            unavailable=(),
            ambient_inputs=(),
            installed_plugins=(),
        ),
        frame_digest=frame_digest,
    )


def stop_word(ended: SessionEnded | None) -> str | None:
    """The terminal record's stop word for ``closing_reason``: none without ``session.ended``;
    codex states no budget stop, so ``completed`` unless it ended in error (docs/events.md#stream-ending,
    docs/adapters/codex.md)."""
    if ended is None:
        return None
    return "completed" if ended.is_error is False else "error"


def _written(stream: Stream, outputs: Iterable[object], out: bytearray) -> Stream:
    """Write each emitted event onto ``stream`` (``metaharness.pure.stream_writer.written_line``), appending its line to ``out``."""
    for item in outputs:
        if isinstance(item, Emitted):
            stream, line = written_line(stream, item.payload, item.at)
            out += line
    return stream


def replay_rollout(record: bytes, launch: RolloutLaunch, run: str) -> tuple[bytes, str]:
    """The whole ``metaharness.event/1`` stream of a retained rollout, and its closing reason."""
    stream = b"".join(replayed_lines(record_lines(record), launch, run))
    return stream, closed_reason(stream)


def replayed_lines(lines: Iterable[bytes], launch: RolloutLaunch, run: str) -> Iterator[bytes]:
    """Each event line of the stream as the rollout's lines (terminators removed) are read: the record
    is never held, and each event is yielded once the line that makes it is read."""
    stream = Stream(run)
    reader = RolloutReader(launch=launch)
    correlator = Correlator(live=False)
    out = bytearray()
    for number, raw in enumerate(lines, start=1):
        reader, readings = read_rollout_line(reader, raw.removesuffix(b"\r"), number)
        correlator, outputs = on_readings(correlator, readings)
        stream = _written(stream, outputs, out)
        if out:
            yield bytes(out)
            out.clear()
    correlator, outputs = on_stream_end(correlator)
    stream = _written(stream, outputs, out)
    ended = session_ended(reader, ZERO_CENSUS)
    if ended is not None:
        stream = _written(stream, (Emitted(ended, reader.last_complete_at),), out)
    yield from drained(out)
    yield replay_ending(stream, closing_reason(halted=False, killed=False, stop=stop_word(ended), budget_stops=()))


def replay(lines: Iterable[bytes], request: ReplayRequest) -> Iterator[ReplayOutput]:
    """A codex rollout mapped as ``replay`` maps it, line by line."""
    launch = replay_launch(decisions=request.decisions, hermetic=request.hermetic, transcript_path=request.transcript_path,
                           frame_digest=None if request.frame is None else request.frame.digest)  # fmt: skip
    return replayed_lines(lines, launch, request.run_id)
