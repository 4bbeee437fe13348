"""``metaharness replay claude <RECORD>``: a retained Claude Code stream-json transcript mapped offline
through the live reader and correlator (spec 10 §10, spec 50 §2 "replay")."""

from __future__ import annotations

import sys

from returns.result import Failure

from metaharness.pure.claude.replay import replay_claude, replay_facts
from metaharness.pure.frames import refuse_frame_beside_observe
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_stages import unaudited_exit
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.refusals import refuse


def run_claude_replay(
    *,
    record: str,
    run_id: str,
    decisions: str,
    frame: str | None,
    hermetic: str,
    harness_version: str | None,
    model: str | None,
    transcript_path: str | None,
) -> int:
    """Map ``record`` into ``metaharness.event/1`` on stdout; exit 0 when the stream closed
    ``completed``, else 3. A frame is loaded and refused as on ``run``; every call takes the record
    path, so nothing is decided. Unreadable RECORD → ``record-unreadable``."""
    beside = refuse_frame_beside_observe(decisions, frame)
    if isinstance(beside, Failure):
        return refuse(beside.failure())
    if frame is not None:
        loaded = read_frame_file(frame)
        if isinstance(loaded, Failure):
            return refuse(loaded.failure())
    try:
        with open(record, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return refuse(Refusal("record-unreadable", f"{record} could not be read: {error.strerror or error}"))
    facts = replay_facts(
        decisions="frame" if decisions == "frame" else "observe",
        hermetic=hermetic if hermetic in ("on", "strict") else "off",
        transcript_path=transcript_path if transcript_path is not None else record,
        harness_version=harness_version,
        model=model,
    )
    stream, reason = replay_claude(data, facts, run_id)
    sys.stdout.buffer.write(stream)
    sys.stdout.flush()
    return unaudited_exit(reason)
