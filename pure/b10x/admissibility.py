"""Which frames a b10x run can enforce (docs/adapters/b10x.md#frame-admissibility): the loop runs its reads
unasked, so a frame that narrowed them would be recorded as enforced when it is not."""

from __future__ import annotations

from typing import TYPE_CHECKING

from returns.result import Failure, Result, Success

from metaharness.pure.refusal import Refusal

if TYPE_CHECKING:
    from metaharness.pure.frames import Frame, Operation

UNASKED_READS = ("file.read", "dir.list", "search")
"""The reads the loop runs unasked below its lowest ceiling, which a b10x frame must admit
(docs/adapters/b10x.md#frame-admissibility)."""


def check_frame_admissible(frame: Frame) -> Result[Frame, Refusal]:
    """``frame-inadmissible`` (docs/adapters/b10x.md#frame-admissibility): the frame must admit ``file.read``,
    ``dir.list`` and ``search`` in its operations and in every subject rule (operations first, then the rules in
    order), and a frame with ``subjects`` must end in a ``**`` or ``file:**`` rule."""
    where: str | None = None
    missing = _first_missing(frame.operations)
    if missing is not None:
        where = "in its operations"
    for number, rule in enumerate(frame.subjects or (), start=1):
        if where is not None:
            break
        missing = _first_missing(rule.operations)
        if missing is not None:
            where = f"in subject rule {number} ({rule.subject})"
    if where is None and frame.subjects is not None and (not frame.subjects or frame.subjects[-1].subject not in ("**", "file:**")):
        missing = UNASKED_READS[0]
        where = "for subjects no rule matches (the last rule must be ** or file:**)"
    if where is None:
        return Success(frame)
    return Failure(
        Refusal(
            "frame-inadmissible",
            f"the frame {frame.digest} does not admit {missing} {where}: the loop runs reads unasked below its "
            "lowest approval ceiling (low), so metaharness cannot decide them, and a frame that narrowed them "
            "would be recorded as enforced when it is not",
        )
    )


def _first_missing(operations: tuple[Operation, ...]) -> str | None:
    names = {operation.op for operation in operations}
    return next((op for op in UNASKED_READS if op not in names), None)
