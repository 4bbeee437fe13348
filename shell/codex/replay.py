"""``metaharness replay codex RECORD``: a retained rollout mapped offline (spec 10 §10, spec 50 §2).

Replay arms no deadline and starts nothing; every call takes the record path with no warning.
"""

from __future__ import annotations

import sys

from returns.result import Failure

from metaharness.pure.codex.replay import replay_launch, replay_rollout
from metaharness.pure.frames import refuse_frame_beside_observe
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_stages import unaudited_exit
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.refusals import refuse


def replay_codex(
    *, record: str, run_id: str, decisions: str, frame: str | None, hermetic: str, transcript_path: str | None
) -> int:
    """Map the rollout at ``record`` onto stdout; exit 0 when the stream closed ``completed``, else 3.
    Refusals: the frame's (``frame-unreadable``, ``frame-invalid``, ``observe-with-frame``), then
    ``record-unreadable``."""
    beside = refuse_frame_beside_observe(decisions, frame)
    if isinstance(beside, Failure):
        return refuse(beside.failure())
    digest = None
    if frame is not None:
        loaded = read_frame_file(frame)
        if isinstance(loaded, Failure):
            return refuse(loaded.failure())
        digest = loaded.unwrap().digest
    try:
        with open(record, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return refuse(Refusal("record-unreadable", f"{record} could not be read: {error.strerror or error}"))
    launch = replay_launch(
        decisions=decisions,
        hermetic=hermetic,
        transcript_path=transcript_path if transcript_path is not None else record,
        frame_digest=digest,
    )
    stream, reason = replay_rollout(data, launch, run_id)
    sys.stdout.buffer.write(stream)
    sys.stdout.flush()
    return unaudited_exit(reason)
