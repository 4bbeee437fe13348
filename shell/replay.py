"""``metaharness replay <KIND> <RECORD>``: a retained vendor record mapped offline (docs/events.md#replay).

One path for every kind: the frame is loaded and refused as on ``run`` (``frame-required`` on b10x,
``observe-with-frame``, the frame file's refusals, b10x's ``frame-inadmissible``), the record is read
once (``record-unreadable``), the kind's pure replay maps it, and the stream goes to stdout. Replay
arms no deadline and starts nothing.
"""

from __future__ import annotations

import sys

from returns.result import Failure

from metaharness.pure.adapter import Adapter, ReplayRequest
from metaharness.pure.adapters import adapter_of
from metaharness.pure.bounds import INPUT_FILE_LIMIT
from metaharness.pure.frames import Frame, refuse_frame_beside_observe
from metaharness.pure.kind import Kind
from metaharness.pure.modes import DecisionMode, HermeticMode
from metaharness.pure.refusal import Refusal
from metaharness.pure.replays import replay_of
from metaharness.pure.run_stages import unaudited_exit
from metaharness.shell.bounded_reads import read_bounded
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.refusals import refuse


def _frame(adapter: Adapter, decisions: str, frame: str | None) -> Frame | None | Refusal:
    """The loaded frame (``None`` without ``--frame``), or the first refusal in ``run``'s order."""
    required = adapter.run_rules.frame_required
    if required is not None and decisions == "frame" and frame is None:
        return Refusal("frame-required", required)
    beside = refuse_frame_beside_observe(decisions, frame)
    if isinstance(beside, Failure):
        refusal: Refusal = beside.failure()
        return refusal
    if frame is None:
        return None
    loaded = read_frame_file(frame)
    if adapter.admit_frame is not None:
        loaded = loaded.bind(adapter.admit_frame)
    return loaded.failure() if isinstance(loaded, Failure) else loaded.unwrap()


def run_replay(
    *,
    kind: Kind,
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
    docs/events.md#replay; exit 0 when the stream closed ``completed``, else 3."""
    adapter = adapter_of(kind)
    loaded = _frame(adapter, decisions, frame)
    if isinstance(loaded, Refusal):
        return refuse(loaded)
    try:
        with open(record, "rb") as handle:
            data = read_bounded(handle, INPUT_FILE_LIMIT)
    except OSError as error:
        return refuse(Refusal("record-unreadable", f"{record} could not be read: {error.strerror or error}"))
    path = transcript_path if transcript_path is not None else record
    request = ReplayRequest(run_id=run_id, decisions=decisions, frame=loaded, hermetic=hermetic,
                            harness_version=harness_version, model=model, transcript_path=path)  # fmt: skip
    replayed = replay_of(kind)(data, request)
    if answers is not None and adapter.caller_seam:
        try:
            with open(answers, "wb") as handle:
                handle.write(replayed.seam_lines)
        except OSError as error:
            return refuse(
                Refusal("answers-unwritable", f"--answers {answers} could not be written: {error.strerror or error}")
            )
    sys.stdout.buffer.write(replayed.stream)
    sys.stdout.flush()
    return unaudited_exit(replayed.reason)
