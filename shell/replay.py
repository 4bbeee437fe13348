"""``metaharness replay <KIND> <RECORD>``: a retained vendor record mapped offline (spec 10 §10)."""

from __future__ import annotations

import sys

from returns.result import Failure

from metaharness.pure.frames import Frame, refuse_frame_beside_observe
from metaharness.pure.options import _FRAME_REQUIRED as FRAME_REQUIRED_MESSAGE
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_stages import unaudited_exit
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.refusals import refuse


def run_replay(
    *,
    kind: str,
    record: str,
    run_id: str,
    decisions: str,
    frame: str | None,
    hermetic: str,
    harness_version: str | None,
    model: str | None,
    transcript_path: str | None,
    answers: str | None,
) -> int:
    """Map ``record`` of ``kind`` into ``metaharness.event/1`` on stdout with the options of
    spec 10 §10; exit 0 when the stream closed ``completed``, else 3."""
    if kind == "claude":
        from metaharness.shell.claude.replay import run_claude_replay

        return run_claude_replay(
            record=record, run_id=run_id, decisions=decisions, frame=frame, hermetic=hermetic,
            harness_version=harness_version, model=model, transcript_path=transcript_path,
        )  # fmt: skip
    if kind == "codex":
        from metaharness.shell.codex.replay import replay_codex

        return replay_codex(
            record=record, run_id=run_id, decisions=decisions, frame=frame, hermetic=hermetic,
            transcript_path=transcript_path,
        )  # fmt: skip
    from metaharness.pure.b10x.launch import check_frame_admissible
    from metaharness.pure.b10x.replay import replay_b10x, replay_settings

    loaded: Frame | None = None
    if decisions == "frame" and frame is None:
        return refuse(Refusal("frame-required", FRAME_REQUIRED_MESSAGE))
    beside = refuse_frame_beside_observe(decisions, frame)
    if isinstance(beside, Failure):
        return refuse(beside.failure())
    if frame is not None:
        checked = read_frame_file(frame).bind(check_frame_admissible)
        if isinstance(checked, Failure):
            return refuse(checked.failure())
        loaded = checked.unwrap()
    try:
        with open(record, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return refuse(Refusal("record-unreadable", f"{record} could not be read: {error.strerror or error}"))
    settings = replay_settings(
        run=run_id,
        decisions="frame" if decisions == "frame" else "observe",
        frame=loaded,
        hermetic=hermetic if hermetic in ("on", "strict") else "off",
        harness_version=harness_version,
        model=model,
        transcript_path=transcript_path if transcript_path is not None else record,
    )
    outcome = replay_b10x(settings, data)
    if answers is not None:
        try:
            with open(answers, "wb") as handle:
                handle.write(outcome.answers)
        except OSError as error:
            return refuse(
                Refusal("answers-unwritable", f"--answers {answers} could not be written: {error.strerror or error}")
            )
    sys.stdout.buffer.write(outcome.stream)
    sys.stdout.flush()
    return unaudited_exit(outcome.reason)
