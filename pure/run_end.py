"""How a live loop ended, the one end-of-run value every kind's loop returns to the run engine
(docs/DEVELOPING.md#the-run-engine): the stream's closing reason, the child's status and, when the child
refused what the run needs before its stream could be wound up (Claude Code not confirming its hooks), that
refusal; when the record's copy lost a write, that refusal too."""

from __future__ import annotations

import msgspec

from metaharness.pure.events import Process
from metaharness.pure.refusal import Refusal


class RunEnd(msgspec.Struct, frozen=True):
    """The closing reason, the child's status, the refusal that stopped the run unwound (else ``None``) and, when
    the retained record lost a write, its refusal (``transcript-write-failed``, given at the audited exit)."""

    reason: str
    process: Process
    refusal: Refusal | None = None
    lost_record: Refusal | None = None


def spawn_failed(program: str, reason: str) -> Refusal:
    """``spawn-failed``: the child's program could not be started (docs/hermetic.md#refusal-order, stage 9 (f))."""
    return Refusal("spawn-failed", f"{program} could not be started: {reason}")
