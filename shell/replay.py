"""``metaharness replay <KIND> <RECORD>``: a retained vendor record mapped offline (spec 10 §10)."""

from __future__ import annotations

from metaharness.pure.refusal import Refusal
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
    spec 10 §10; exit 0 when the stream closed ``completed``, else 3. Not built yet: refuses
    ``not-built``."""
    return refuse(
        Refusal(
            "not-built",
            f"replay {kind} is not built in this build: it waits for the kind's record reader and seam "
            "(spec 40 §5, spec 50 §3-§4)",
        )
    )
