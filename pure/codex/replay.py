"""``replay codex RECORD``: a retained rollout mapped offline through the live reader and correlator
(spec 10 §10, spec 50 §2 "replay"). Every call takes the record path with no warning; nothing is
decided, so the census is zero; no terminal record is invented.
"""

from __future__ import annotations

from collections.abc import Iterable

from metaharness.pure.codex.rollout import Emitted, RolloutLaunch, RolloutReader, read_rollout_line, session_ended
from metaharness.pure.codex.seam import Correlator, on_readings, on_stream_end
from metaharness.pure.events import Census, SessionEnded, Stream, ToolDecided, UnknownProcess, closing_marker, stamp


def census_of(decided: Iterable[ToolDecided]) -> Census:
    """The decision census over ``tool.decided`` events (spec 20 §9): counts by kind, and by seam
    and decider with non-zero keys only."""
    kinds = {"allow": 0, "deny": 0, "replace": 0, "abstain": 0}
    by_seam: dict[str, int] = {}
    by_decider: dict[str, int] = {}
    for event in decided:
        kinds[type(event.decision).__struct_config__.tag] += 1
        by_seam[event.seam] = by_seam.get(event.seam, 0) + 1
        by_decider[event.decided_by] = by_decider.get(event.decided_by, 0) + 1
    return Census(
        allowed=kinds["allow"],
        denied=kinds["deny"],
        replaced=kinds["replace"],
        abstained=kinds["abstain"],
        by_seam=dict(sorted(by_seam.items())),
        by_decider=dict(sorted(by_decider.items())),
    )


def closing_reason(ended: SessionEnded | None) -> str:
    """``stream.closed.reason`` for a run no command or signal ended (spec 20 §4): no terminal record
    → ``error``; ``is_error`` false → ``completed``; else ``error`` (codex names no budget stop)."""
    if ended is None:
        return "error"
    return "completed" if ended.is_error is False or ended.subtype == "success" else "error"


def record_lines(record: bytes) -> tuple[bytes, ...]:
    """The complete lines of a record, terminators removed; an unterminated last line counts too."""
    lines = record.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return tuple(line[:-1] if line.endswith(b"\r") else line for line in lines)


def _written(stream: Stream, outputs: Iterable[object], out: bytearray) -> Stream:
    """Stamp each emitted event onto ``stream``, appending its line to ``out``."""
    for item in outputs:
        if isinstance(item, Emitted):
            stream, line = stamp(stream, item.payload, item.at)
            out.extend(line)
    return stream


def replay_rollout(record: bytes, launch: RolloutLaunch, run: str) -> tuple[bytes, str]:
    """The whole ``metaharness.event/1`` stream of a retained rollout, and its closing reason."""
    stream = Stream(run)
    reader = RolloutReader(launch=launch)
    correlator = Correlator(live=False)
    out = bytearray()
    for number, raw in enumerate(record_lines(record), start=1):
        reader, readings = read_rollout_line(reader, raw, number)
        correlator, outputs = on_readings(correlator, readings)
        stream = _written(stream, outputs, out)
    correlator, outputs = on_stream_end(correlator)
    stream = _written(stream, outputs, out)
    ended = session_ended(reader, census_of(()))
    if ended is not None:
        stream = _written(stream, (Emitted(ended),), out)
    reason = closing_reason(ended)
    stream, line = stamp(stream, closing_marker(stream, reason, UnknownProcess()))
    out.extend(line)
    return bytes(out), reason
