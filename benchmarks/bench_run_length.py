"""A call's cost at the end of a long run against its cost in a short one, measured in the same run
(issue 25: a hostile tool can make a run as long as it likes, so every per-event step must cost the same at
the millionth call as at the first).

Four paths, each fed N and then 8N calls, every call a request, a decision and a result:

* live — the hook seam's correlator (a call the hook delivered, then the record's announcement and result of
  it), the amended writer of a live run (``metaharness.pure.stream_writer.write``, so the stream amendment and
  the witness's ``StreamAccount``) and the route witness's account (one exchange per call, its emission and
  its result); every other call is denied, and its result is the error the denial makes;
* held — the correlator alone, record first, behind one announced call that no hook delivers and no result
  ends, so every later reading is held until the stream's end (a hostile record's open call);
* replay — claude's record reader over a transcript of the vector ``vectors/claude/record/bash.jsonl`` with
  its middle (a tool call, its result, a message) repeated with fresh ids (``replayed_lines``, as ``replay
  claude`` maps it);
* again — one call id presented again N times through the amended writer, each time with another input that
  the frame denies (a hostile harness re-presenting one id: every presentation and every deny is remembered).

Reported per path: the CPU time per call at N and at 8N (``time.process_time``, so another process on the
shared machine waiting for a core does not count), the wall time beside it, and their ratio 8N/N: flat is near
1, a state copied on every call grows with the run (toward 8 at 8N). Each is measured again with the cyclic
garbage collector off (``no gc``): what the run must remember (every call the amendment denied, the witness's
account) is a heap that grows with the run, and the collector's full passes over it are a cost of the runtime,
not of copying; the ``no gc`` figure is the state's own. With the collector on, each line also gives its full
(generation 2) passes at N and 8N and their share of the CPU time (``gc.callbacks``): the state's structs held
per call are ``gc=False`` (docs/DEVELOPING.md#untracked-state), so what a full pass still walks is the
persistent maps' own nodes. Median of REPEATS.

Run: ``.venv/bin/python benchmarks/bench_run_length.py [N] [REPEATS] [PATH...]`` (default 10000, 3, all four).
To see an earlier commit's growth, run this file with ``PYTHONPATH`` at that commit's ``src/`` (``git archive``
it into a scratch directory): on the commit before the persistent maps, at N = 2000, live was 9.97× and held
8.91× (CPU per call at 8N over N); after them 1.14× and 1.80× (1.12× and 1.42× with the collector off). On
the commit before an id's presentations and denials were persistent maps, at N = 1000 (load ≈ 10 on 2 cores),
again was 5.55× (73.6 → 408.7 µs per call; 7.76× with the collector off); after them 0.94× (35.8 → 33.6 µs).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import msgspec

from metaharness.pure.claude.replay import replay_facts, replayed_lines
from metaharness.pure.correlation import Correlator, Present, on_hook_call, on_readings, on_stream_end
from metaharness.pure.events import Allow, Deny, EventValue, Stream, ToolDecided, ToolRequested, ToolResult
from metaharness.pure.hook_channel import HookCall
from metaharness.pure.readings import Announced, Emitted, Finished
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write
from metaharness.pure.witness import EmittedCall, Exchange, RouteAccount, SentResult, witness

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
REPEATS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
PATHS = tuple(sys.argv[3:])
VECTOR = Path(__file__).resolve().parent.parent / "vectors" / "claude" / "record" / "bash.jsonl"
FRESH = (b"toolu_b10x_001", b"msg_b10x_001", b"msg_b10x_002")
REASON = "denied by the frame"


def _requested(call_id: str) -> ToolRequested:
    return ToolRequested(call_id=call_id, name="Bash", input={"command": f"echo {call_id}"}, decision_required=True,
                         deadline_ms=None, seam="hook")  # fmt: skip


def live(calls: int) -> None:
    """``calls`` calls through the correlator, the amended writer and the route witness."""
    correlator = Correlator(live=True)
    writer = StreamWriter(Stream("run"), Amendment())
    account = RouteAccount()
    for k in range(calls):
        call_id = f"toolu_{k:08d}"
        denied = k % 2 == 1
        requested = _requested(call_id)
        correlator, outputs = on_hook_call(correlator, HookCall(key=f"k{k}", call_id=call_id, name="Bash", correlated=True,
                                                                 input=requested.input))  # fmt: skip
        result = ToolResult(call_id=call_id, is_error=denied, content=REASON if denied else "ok", exit_code=None,
                            outcome_source=None, bytes=None, tool_use_result=None)  # fmt: skip
        correlator, released = on_readings(correlator, (Announced(call_id, requested), Finished(call_id, result)))
        decision = ToolDecided(call_id=call_id, decision=Deny(REASON) if denied else Allow(), decided_by="frame",
                               seam="hook", latency_ms=0)  # fmt: skip
        values = [requested if isinstance(o, Present) else o.payload for o in outputs]
        values[1:1] = [decision]
        values += [o.payload for o in released if isinstance(o, Emitted)]
        for payload in values:
            writer, _ = write(writer, EventValue(payload))
        emitted = EmittedCall(call_id, "Bash", requested.input)
        account = witness(account, Exchange((emitted,), (SentResult(call_id, denied, result.content),), None))
    assert writer.stream.written >= 3 * calls


def held(calls: int) -> None:
    """``calls`` calls through the correlator behind one announced call no hook delivers and no result ends
    (record first: every later reading is held behind it until the stream's end)."""
    correlator, _ = on_readings(Correlator(live=True), (Announced("toolu_open", _requested("toolu_open")),))
    for k in range(calls):
        call_id = f"toolu_{k:08d}"
        requested = _requested(call_id)
        result = ToolResult(call_id=call_id, is_error=False, content="ok", exit_code=None, outcome_source=None,
                            bytes=None, tool_use_result=None)  # fmt: skip
        correlator, _ = on_readings(correlator, (Announced(call_id, requested),))
        call = HookCall(key=f"k{k}", call_id=call_id, name="Bash", correlated=True, input=requested.input)
        correlator, _ = on_hook_call(correlator, call)
        correlator, _ = on_readings(correlator, (Finished(call_id, result),))
    correlator, released = on_stream_end(correlator)
    assert len(released) >= calls


def again(calls: int) -> None:
    """One call id presented ``calls`` times through the amended writer, each with a new input, each denied."""
    writer = StreamWriter(Stream("run"), Amendment())
    for k in range(calls):
        requested = msgspec.structs.replace(_requested("toolu_again"), input={"command": f"echo {k}"})
        decision = ToolDecided(call_id="toolu_again", decision=Deny(REASON), decided_by="frame", seam="hook", latency_ms=0)
        result = ToolResult(call_id="toolu_again", is_error=True, content=REASON, exit_code=None, outcome_source=None,
                            bytes=None, tool_use_result=None)  # fmt: skip
        for payload in (requested, decision, result):
            writer, _ = write(writer, EventValue(payload))
    assert writer.stream.written >= 3 * calls


def transcript(calls: int) -> list[bytes]:
    """A claude transcript of the vector's opening, its middle ``calls`` times with fresh ids, its end."""
    golden = VECTOR.read_bytes().splitlines()
    opening, middle, closing = golden[:1], golden[1:-1], golden[-1]
    lines = list(opening)
    for cycle in range(calls):
        for line in middle:
            for fresh in FRESH:
                line = line.replace(fresh, fresh + f"_{cycle:08d}".encode())
            lines.append(line)
    return [*lines, closing]


def replay(lines: list[bytes]) -> None:
    facts = replay_facts(decisions="none", hermetic="off", transcript_path="t.jsonl", harness_version=None, model=None)
    written: Iterator[bytes] = replayed_lines(lines, facts, "run")
    assert sum(1 for _ in written) >= len(lines) - 2


def timed(run: Callable[[], None], collecting: bool) -> tuple[float, float, int, float]:
    """(CPU seconds, wall seconds, the collector's full passes and their CPU seconds) of one ``run``;
    ``collecting`` false: with the cyclic collector off."""
    passes: list[float] = []
    started = [0.0]

    def count(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started[0] = time.process_time()
            else:
                passes.append(time.process_time() - started[0])

    if not collecting:
        gc.disable()
    gc.callbacks.append(count)
    try:
        cpu, wall = time.process_time(), time.perf_counter()
        run()
        return time.process_time() - cpu, time.perf_counter() - wall, len(passes), sum(passes)
    finally:
        gc.callbacks.remove(count)
        gc.enable()


def report(name: str, runs: dict[int, list[tuple[float, float, int, float]]]) -> None:
    small, large = sorted(runs)
    cpu = {size: statistics.median(r[0] for r in runs[size]) / size * 1e6 for size in runs}
    wall = {size: statistics.median(r[1] for r in runs[size]) / size * 1e6 for size in runs}
    passes = {size: statistics.median(r[2] for r in runs[size]) for size in runs}
    share = {size: statistics.median(r[3] / r[0] for r in runs[size]) * 100 for size in runs}
    full = "" if name.endswith("(no gc)") else (f"; full passes {passes[small]:.0f} → {passes[large]:.0f}, "
                                                 f"{share[small]:.0f}% → {share[large]:.0f}% of CPU")  # fmt: skip
    print(f"{name:>13}: per call CPU {cpu[small]:.1f} µs at {small}, {cpu[large]:.1f} µs at {large}: "
          f"{cpu[large] / cpu[small]:.2f}× (wall {wall[small]:.1f} → {wall[large]:.1f} µs, "
          f"{wall[large] / wall[small]:.2f}×; aim ≈ 1){full}")  # fmt: skip


def main() -> None:
    sizes = (N, 8 * N)
    records = {size: transcript(size) for size in sizes}
    paths: dict[str, Callable[[int], Callable[[], None]]] = {
        "live": lambda size: partial(live, size),
        "held": lambda size: partial(held, size),
        "replay": lambda size: partial(replay, records[size]),
        "again": lambda size: partial(again, size),
    }
    chosen = PATHS or tuple(paths)
    runs: dict[str, dict[int, list[tuple[float, float, int, float]]]] = {}
    for _ in range(REPEATS):
        for size in sizes:  # interleaved: a change of load falls on both sizes alike
            for collecting in (True, False):
                for name in chosen:
                    label = name if collecting else f"{name} (no gc)"
                    runs.setdefault(label, {}).setdefault(size, []).append(timed(paths[name](size), collecting))
    for name, measured in runs.items():
        report(name, measured)


if __name__ == "__main__":
    main()
