"""``replay b10x``: a retained loop record mapped offline through the live seam (docs/events.md#replay,
docs/adapters/b10x.md#reading-the-record).

Replay plans no launch, probes nothing and arms no deadline: no plan-time warning, ``transcript``
``{path, null, null}``, an empty attestation with the replay's mode, ``process`` unknown.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

from metaharness.pure.adapter import ReplayOutput, ReplayRequest, SeamAnswer
from metaharness.pure.b10x.seam import AnswerLine, SeamSettings, SeamState, end_of_record, open_seam, read_line, wind_up
from metaharness.pure.events import EventValue, Hermetic, StreamClosed, Transcript, UnknownProcess
from metaharness.pure.frames import Frame
from metaharness.pure.modes import DecisionMode, HermeticMode
from metaharness.pure.stream_writer import numbered_line


class ReplayOutcome(msgspec.Struct, frozen=True):
    """The stream's bytes, the answer lines metaharness would have written, and the closing reason."""

    stream: bytes
    answers: bytes
    reason: str


def replay_hermetic(mode: HermeticMode, decisions: DecisionMode) -> Hermetic:
    """The attestation a replay records (docs/events.md#replay): the mode and decisions, every list empty."""
    return Hermetic(
        mode=mode, decisions=decisions, imposed=(), declared=(), unavailable=(), ambient_inputs=(), installed_plugins=()
    )


def replay_settings(
    *,
    run: str = "replay",
    decisions: DecisionMode = "observe",
    frame: Frame | None = None,
    hermetic: HermeticMode = "off",
    harness_version: str | None = None,
    model: str | None = None,
    transcript_path: str,
) -> SeamSettings:
    """The seam settings of a replay with the options of docs/events.md#replay."""
    return SeamSettings(
        run=run,
        mode=decisions,
        model=model,
        harness_version=harness_version,
        transcript=Transcript(path=transcript_path, digest=None, bytes=None),
        hermetic=replay_hermetic(hermetic, decisions),
        frame=frame,
    )


def record_lines(record: bytes) -> Iterator[tuple[int, bytes]]:
    """Each line of a record, numbered from 1 with blank lines counted, its ``\\n`` stripped; a final
    line without a terminator is still a line."""
    lines = record.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return enumerate(lines, start=1)


def replay_b10x(settings: SeamSettings, record: bytes) -> ReplayOutcome:
    """Map ``record`` through the seam and the wind-up a live run uses; nothing is invented."""
    stream: list[bytes] = []
    answers: list[bytes] = []
    for output in replayed_lines((line for _, line in record_lines(record)), settings):
        if isinstance(output, SeamAnswer):
            answers.append(output.line)
        else:
            stream.append(output)
    closed = msgspec.json.decode(stream[-1], type=StreamClosed)
    return ReplayOutcome(b"".join(stream), b"".join(answers), closed.reason)


def replayed_lines(lines: Iterable[bytes], settings: SeamSettings) -> Iterator[ReplayOutput]:
    """Each event line and caller-seam answer as the record's lines (``\\n`` removed) are read through the
    seam; the record is never held. The seam counts the stream (its calls, ``stream.closed.events``), so the
    writer here keeps only how many lines it numbered (``numbered_line``)."""
    state: SeamState
    state, effects = open_seam(settings)
    run = state.stream.run
    written, outputs = _outputs(run, 0, effects)
    yield from outputs
    for number, line in enumerate(lines, start=1):
        state, effects = read_line(state, number, line)
        for effect in effects:  # _outputs, inline: this loop runs once a record line
            if type(effect) is EventValue:
                yield numbered_line(written, run, effect)
                written += 1
            elif type(effect) is AnswerLine:
                yield SeamAnswer(effect.line)
    state, effects = end_of_record(state)
    written, outputs = _outputs(run, written, effects)
    yield from outputs
    state, effects = wind_up(state, process=UnknownProcess())
    yield from _outputs(run, written, effects)[1]


def _outputs(run: str, written: int, effects: tuple[object, ...]) -> tuple[int, list[ReplayOutput]]:
    """Each event value numbered after ``written`` lines and encoded (``numbered_line``) and each answer line, in
    order; the lines numbered then."""
    outputs: list[ReplayOutput] = []
    for effect in effects:
        if isinstance(effect, EventValue):
            outputs.append(numbered_line(written, run, effect))
            written += 1
        elif isinstance(effect, AnswerLine):
            outputs.append(SeamAnswer(effect.line))
    return written, outputs


def replay(lines: Iterable[bytes], request: ReplayRequest) -> Iterator[ReplayOutput]:
    """A loop record mapped as ``replay`` maps it, line by line, with the caller-seam lines it answers."""
    settings = replay_settings(run=request.run_id, decisions=request.attested_decisions, frame=request.frame, hermetic=request.hermetic,
                               harness_version=request.harness_version, model=request.model,
                               transcript_path=request.transcript_path)  # fmt: skip
    return replayed_lines(lines, settings)
