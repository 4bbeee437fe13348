"""Per-call decision latency through the hook channel (issue 6), against a baseline measured in the
same run.

Each call starts the real ``hooks/pretooluse`` program with a captured Claude Code request on its
stdin (as the vendor does), waits on the doorbell, reads the request, decides it through the pure
decision desk (frame mode, an admitting frame) and writes the answer through the channel. Codex decides
through this channel; Claude Code decides in-band (``benchmarks/bench_claude_inband.py``). Reported:
hook start → answer written, and hook start → answer printed and the hook exited; median and p99;
aim for a median ≤ 20 ms. The baseline is one bare ``sh`` process start per call (``sh -c 'cat
>/dev/null'``), so the ratio shows how many process starts the channel costs: the hook program starts
``mktemp``, ``cat``, ``mkfifo``, ``mv``, ``timeout``+``sh``, ``timeout``+``head`` and ``cat`` — about nine
— and those starts dominate; metaharness's side (doorbell read, request parse, decision, rename,
wake) is well under a millisecond.

Run: ``.venv/bin/python benchmarks/bench_hook_channel.py [CALLS]``.
"""

from __future__ import annotations

import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from metaharness.pure.decisions import Answer, PresentedCall, open_desk, present
from metaharness.pure.events import Allow
from metaharness.pure.frames import Operation, seal_frame
from metaharness.pure.hook_channel import pretooluse_answer, read_hook_request, render_hook_program
from metaharness.pure.jsonline import compact
from metaharness.shell.hook_channel import HookChannel

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
FRAME = seal_frame(
    {"format": "metaharness.frame/1", "workflow": {"id": "bench", "version": "1"}, "node": {"id": "n"},
     "step": {"workflow": "bench", "state": "s", "index": 0, "attempt": 1}, "prior": [], "obligations": [],
     "reaching": [], "next": [], "handoff": {"handoff": "none"}, "operations": [{"op": "shell"}]}
).unwrap()  # fmt: skip


def request(number: int) -> bytes:
    return compact(
        {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
         "tool_input": {"command": "echo emulated"}, "tool_use_id": f"toolu_{number:05d}"}
    )  # fmt: skip


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def baseline() -> list[float]:
    """One bare ``sh`` start per call, fed the same request."""
    times = []
    for number in range(CALLS):
        started = time.perf_counter()
        subprocess.run(["sh", "-c", "cat >/dev/null"], input=request(number), check=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


def channel_calls(scratch: Path) -> tuple[list[float], list[float], list[float]]:
    """Sequential calls through the real hook program: (start → answer written, start → hook exited,
    doorbell rang → answer written)."""
    program = scratch / "hooks" / "pretooluse"
    program.parent.mkdir()
    program.write_text(render_hook_program(str(scratch)))
    program.chmod(0o700)
    channel = HookChannel.create(str(scratch))
    desk = open_desk("frame", FRAME)
    written: list[float] = []
    printed: list[float] = []
    inside: list[float] = []
    try:
        for number in range(CALLS):
            started = time.perf_counter()
            hook = subprocess.Popen([str(program)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            assert hook.stdin is not None and hook.stdout is not None
            hook.stdin.write(request(number))
            hook.stdin.close()
            select.select([channel], [], [])
            rang = time.perf_counter()
            for key in channel.ring():
                call = read_hook_request(key, channel.request(key) or b"")
                presented = PresentedCall(call_id=call.call_id, name=call.name, input=call.input, seam="hook",
                                          operations=(Operation("shell"),), subjects=("proc:echo",))  # fmt: skip
                desk, effects = present(desk, presented)
                for effect in effects:
                    if isinstance(effect, Answer):
                        assert isinstance(effect.decision, Allow)
                        channel.answer(key, pretooluse_answer(permissionDecision="allow"))
                        now = time.perf_counter()
                        written.append((now - started) * 1000)
                        inside.append((now - rang) * 1000)
            answer = hook.stdout.read()
            hook.wait()
            printed.append((time.perf_counter() - started) * 1000)
            assert b'"permissionDecision":"allow"' in answer, answer
    finally:
        channel.close()
    return written, printed, inside


def main() -> None:
    base = baseline()
    with tempfile.TemporaryDirectory(prefix="metaharness-bench-") as scratch:
        written, printed, inside = channel_calls(Path(scratch))
    base_median = statistics.median(base)
    print(f"hook channel, {CALLS} sequential calls (frame mode, allow)")
    print(f"  baseline: one bare sh start      median {base_median:6.2f} ms  p99 {percentile(base, 0.99):6.2f} ms")
    rows = (
        ("hook start -> answer written", written),
        ("hook start -> answer printed", printed),
        ("doorbell rang -> answer written", inside),
    )
    for name, values in rows:
        median = statistics.median(values)
        print(
            f"  {name:<31}  median {median:6.2f} ms  p99 {percentile(values, 0.99):6.2f} ms  "
            f"= {median / base_median:4.1f}x the baseline"
        )
    print("  dominated by the hook program's own process starts (about nine per call); aim: median <= 20 ms")


if __name__ == "__main__":
    main()
