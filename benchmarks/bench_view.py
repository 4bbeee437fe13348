"""The view's cost per event against reading the event, measured in the same run (docs/view.md).

A synthetic run of N calls (text, requested, decided, result: four lines per call) is read once with
``read_event`` (the baseline: what any reader of the stream pays), then folded by ``fold_view`` with the
plain-text lines of each step (what ``metaharness-view`` adds), at N and 8N calls, after one warm-up
pass. Reported: µs per event for both, the view's ratio to reading, and the view's µs per event at 8N
over N: staying near 1 shows a fold step costs the same however long the run already is (the state
keeps calls and timeline in persistent maps, so a step copies nothing). Python's cyclic collector is
paused while both are timed: its passes grow with the objects alive and would blur that figure.
Aim: ratio to reading ≤ 4, 8N over N ≤ 1.3.

Run: ``.venv/bin/python benchmarks/bench_view.py [CALLS]``.
"""

from __future__ import annotations

import gc
import sys
import time

from metaharness.pure.events import EventLine, read_event
from metaharness.pure.jsonline import compact
from metaharness.pure.run_view import ViewState, fold_view, plain_lines

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 2000


def lines(calls: int) -> list[bytes]:
    payloads = []
    for number in range(calls):
        call_id = f"call_{number:06d}"
        payloads += [
            {"event": "text", "text": "reading the next file ", "request_id": None},
            {"event": "tool.requested", "call_id": call_id, "name": "file_read", "input": {"path": f"src/{number}.py"},
             "decision_required": False, "deadline_ms": None, "seam": "control_request"},
            {"event": "tool.decided", "call_id": call_id, "decision": {"decision": "allow"}, "decided_by": "frame",
             "seam": "control_request", "latency_ms": None},
            {"event": "tool.result", "exit_code": None, "outcome_source": None, "call_id": call_id, "is_error": False,
             "content": "x", "bytes": 1, "tool_use_result": None},
        ]  # fmt: skip
    return [compact({"format": "metaharness.event/1", "seq": seq, "run": "bench", **payload})
            for seq, payload in enumerate(payloads, start=1)]


def measure(calls: int) -> tuple[float, float]:
    """µs per event: reading every line, then folding and printing every read line."""
    data = lines(calls)
    gc.collect()
    gc.disable()
    started = time.perf_counter()
    read: list[EventLine] = [read_event(line).unwrap() for line in data]
    reading = time.perf_counter() - started
    started = time.perf_counter()
    state = ViewState()
    for item in read:
        after = fold_view(state, item, 0.0)
        plain_lines(state, after, item)
        state = after
    viewing = time.perf_counter() - started
    gc.enable()
    return reading / len(data) * 1e6, viewing / len(data) * 1e6


def main() -> None:
    measure(CALLS)
    per_event = []
    for calls in (CALLS, 8 * CALLS):
        reading, viewing = measure(calls)
        per_event.append(viewing)
        print(f"{calls * 4} events: read {reading:.1f} µs/event, view {viewing:.1f} µs/event, "
              f"ratio to reading {viewing / reading:.2f}")
    print(f"view µs/event at 8N over N: {per_event[1] / per_event[0]:.2f}")


if __name__ == "__main__":
    main()
