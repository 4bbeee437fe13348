"""The pinned Codex CLI found as a run's child would find it, and the stream checks the codex
end-to-end tests share (docs/events.md#reading-a-stream, docs/adapters/codex.md)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.frames import frame_skeleton
from vendor_cli import PINS, pinned_cli

from metaharness.pure.events import read_event
from metaharness.pure.frames import frame_document, seal_frame

PINNED = PINS["codex"]
CODEX = pinned_cli("codex")
"""The ``codex`` on the child's PATH floor (``$HOME/.local/bin`` first) when it is the pin, else None."""


def sealed_frame(tmp_path: Path, operations: list[str], subjects: list[dict] | None = None) -> str:
    raw = frame_skeleton("development/default", "implement", "implement", operations=[{"op": op} for op in operations])
    if subjects is not None:
        raw["subjects"] = subjects
    path = tmp_path / "step.frame.json"
    path.write_bytes(frame_document(seal_frame(raw).unwrap()))
    return str(path)


def well_formed(raw: list[bytes]) -> list[dict]:
    """Every line a valid (docs/events.md#reading-a-stream) event, seq 1.. without gaps, one run id, exactly one
    ``stream.closed`` last with ``events`` = the lines before it, and one ``tool.requested`` per presented call id."""
    events = []
    for number, line in enumerate(raw, start=1):
        assert line.endswith(b"\n")
        parsed = read_event(line)
        assert parsed.unwrap().seq == number
        events.append(json.loads(line))
    assert len({e["run"] for e in events}) == 1
    closed = [e for e in events if e["event"] == "stream.closed"]
    assert len(closed) == 1 and events[-1] is closed[0] and closed[0]["events"] == len(events) - 1
    requested = [e["call_id"] for e in events if e["event"] == "tool.requested"]
    assert len(requested) == len(set(requested))
    decided = [e["call_id"] for e in events if e["event"] == "tool.decided"]
    assert len(decided) == len(set(decided)) and set(decided) <= set(requested)
    return events


def of(events: list[dict], name: str) -> list[dict]:
    return [e for e in events if e["event"] == name]


def decided(events: list[dict], call_id: str) -> dict:
    (decision,) = [e for e in of(events, "tool.decided") if e["call_id"] == call_id]
    return decision


def census(events: list[dict]) -> dict:
    return of(events, "session.ended")[0]["census"]
