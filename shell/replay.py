"""``metaharness replay <KIND> <RECORD>``: a retained vendor record mapped offline (spec 10 §10).

One path for every kind: the frame is loaded and refused as on ``run`` (``frame-required`` on b10x,
``observe-with-frame``, the frame file's refusals, b10x's ``frame-inadmissible``), the record is read
once (``record-unreadable``), the kind's pure replay maps it, and the stream goes to stdout. Replay
arms no deadline and starts nothing.
"""

from __future__ import annotations

import sys

from returns.result import Failure

from metaharness.pure.bounds import INPUT_FILE_LIMIT
from metaharness.pure.frames import Frame, refuse_frame_beside_observe
from metaharness.pure.options import _FRAME_REQUIRED as FRAME_REQUIRED_MESSAGE
from metaharness.pure.options import DecisionMode, HermeticMode
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_stages import unaudited_exit
from metaharness.shell.bounded_reads import read_bounded
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.refusals import refuse


def _frame(kind: str, decisions: str, frame: str | None) -> Frame | None | Refusal:
    """The loaded frame (``None`` without ``--frame``), or the first refusal in ``run``'s order."""
    if kind == "b10x" and decisions == "frame" and frame is None:
        return Refusal("frame-required", FRAME_REQUIRED_MESSAGE)
    beside = refuse_frame_beside_observe(decisions, frame)
    if isinstance(beside, Failure):
        return beside.failure()
    if frame is None:
        return None
    loaded = read_frame_file(frame)
    if kind == "b10x":
        from metaharness.pure.b10x.launch import check_frame_admissible

        loaded = loaded.bind(check_frame_admissible)
    return loaded.failure() if isinstance(loaded, Failure) else loaded.unwrap()


def _replayed(
    kind: str, data: bytes, run_id: str, decisions: DecisionMode, frame: Frame | None, hermetic: HermeticMode,
    harness_version: str | None, model: str | None, transcript_path: str,
) -> tuple[bytes, str, bytes]:  # fmt: skip
    """The kind's pure replay: the stream, its closing reason, and the b10x caller-seam lines."""
    mode: DecisionMode = "frame" if decisions == "frame" else "observe"
    attested: HermeticMode = hermetic if hermetic in ("on", "strict") else "off"
    if kind == "claude":
        from metaharness.pure.claude.replay import replay_claude, replay_facts

        facts = replay_facts(decisions=mode, hermetic=attested, transcript_path=transcript_path,
                             harness_version=harness_version, model=model)  # fmt: skip
        stream, reason = replay_claude(data, facts, run_id)
        return stream, reason, b""
    if kind == "codex":
        from metaharness.pure.codex.replay import replay_launch, replay_rollout

        launch = replay_launch(decisions=decisions, hermetic=hermetic, transcript_path=transcript_path,
                               frame_digest=None if frame is None else frame.digest)  # fmt: skip
        stream, reason = replay_rollout(data, launch, run_id)
        return stream, reason, b""
    from metaharness.pure.b10x.replay import replay_b10x, replay_settings

    settings = replay_settings(run=run_id, decisions=mode, frame=frame, hermetic=attested,
                               harness_version=harness_version, model=model, transcript_path=transcript_path)  # fmt: skip
    outcome = replay_b10x(settings, data)
    return outcome.stream, outcome.reason, outcome.answers


def run_replay(
    *,
    kind: str,
    record: str,
    run_id: str,
    decisions: DecisionMode,
    frame: str | None,
    hermetic: HermeticMode,
    harness_version: str | None,
    model: str | None,
    transcript_path: str | None,
    answers: str | None,
) -> int:
    """Map ``record`` of ``kind`` into ``metaharness.event/1`` on stdout with the options of
    spec 10 §10; exit 0 when the stream closed ``completed``, else 3."""
    loaded = _frame(kind, decisions, frame)
    if isinstance(loaded, Refusal):
        return refuse(loaded)
    try:
        with open(record, "rb") as handle:
            data = read_bounded(handle, INPUT_FILE_LIMIT)
    except OSError as error:
        return refuse(Refusal("record-unreadable", f"{record} could not be read: {error.strerror or error}"))
    path = transcript_path if transcript_path is not None else record
    stream, reason, seam_lines = _replayed(kind, data, run_id, decisions, loaded, hermetic, harness_version, model, path)
    if answers is not None and kind == "b10x":
        try:
            with open(answers, "wb") as handle:
                handle.write(seam_lines)
        except OSError as error:
            return refuse(
                Refusal("answers-unwritable", f"--answers {answers} could not be written: {error.strerror or error}")
            )
    sys.stdout.buffer.write(stream)
    sys.stdout.flush()
    return unaudited_exit(reason)
