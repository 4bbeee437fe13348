"""The frame skeleton tests seal: a ``metaharness.frame/1`` document's required fields (docs/frames.md), with
one workflow at version 1, its step at attempt 1, nothing prior, obliged, reaching or next, and no handoff."""

from __future__ import annotations

from typing import Any


def frame_skeleton(workflow: str = "w", node: str = "n", state: str = "s", index: int = 0, **fields: Any) -> dict[str, Any]:
    """The unsealed document of workflow ``workflow``, node ``node`` and step ``state`` #``index``; ``fields``
    (``operations``, ``subjects``, ``handoff``, …) added, or in place of the skeleton's own."""
    return {
        "format": "metaharness.frame/1",
        "workflow": {"id": workflow, "version": "1"},
        "node": {"id": node},
        "step": {"workflow": workflow, "state": state, "index": index, "attempt": 1},
        "prior": [],
        "obligations": [],
        "reaching": [],
        "next": [],
        "handoff": {"handoff": "none"},
        **fields,
    }
