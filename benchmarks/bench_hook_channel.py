"""Per-call decision latency through the hook channel (issue 6), against a baseline measured in the
same run.

Each call starts the real ``hooks/pretooluse`` program with a captured Claude Code request on its
stdin (as the vendor does), waits on the doorbell, reads the request, decides it through the pure
claude session (frame mode, an admitting frame) and writes the answer through the channel. Reported:
hook start → answer written, and hook start → answer printed and the hook exited; median and p99;
aim for a median ≤ 20 ms. The baseline is one bare ``sh`` process start per call (``sh -c 'cat
>/dev/null'``), so the ratio shows how many process starts the channel costs: the hook program starts
``mktemp``, ``cat``, ``mkfifo``, ``mv``, ``timeout``+``sh``, ``timeout``+``head`` and ``cat`` — about nine
— and those starts dominate; metaharness's side (doorbell read, request parse, decision, rename,
wake) is well under a millisecond.

Before and after (issue 19): the same calls through a copy of the channel's earlier by-name code path
(``ByNameChannel``: ``open`` of ``responses/.writing.<key>`` with ``O_CREAT | O_TRUNC``, ``rename``, the
wake FIFO opened by path) and through the directory-descriptor channel; the run prints the ratio of
their medians (aim: at most 1.1x). The two are interleaved call by call so drift hits both alike.

Run: ``.venv/bin/python benchmarks/bench_hook_channel.py [CALLS]``.
"""

from __future__ import annotations

import errno
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from returns.result import Result, Success

from metaharness.pure.bounds import HOOK_REQUEST_LIMIT
from metaharness.pure.claude.replay import replay_facts
from metaharness.pure.claude.session import HookAnswer, Session, answered, hook_request, open_session
from metaharness.pure.frames import seal_frame
from metaharness.pure.hook_channel import render_hook_program
from metaharness.pure.jsonline import compact
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import open_regular
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


class ByNameChannel(HookChannel):
    """The channel's earlier code path, kept here only as the benchmark's "before": every file by its name."""

    def request(self, key: str) -> bytes | None:
        try:
            with open_regular(os.path.join(self.scratch, "hook-channel", "requests", f"{key}.json")) as handle:
                return handle.read(HOOK_REQUEST_LIMIT + 1)[:HOOK_REQUEST_LIMIT]
        except OSError:
            return None

    def answer(self, key: str, body: bytes) -> Result[bool, Refusal]:
        responses = os.path.join(self.scratch, "hook-channel", "responses")
        writing = os.path.join(responses, f".writing.{key}")
        with os.fdopen(os.open(writing, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as handle:
            handle.write(body)
        os.rename(writing, os.path.join(responses, f"{key}.json"))
        try:
            wake = os.open(os.path.join(responses, f"{key}.wake"), os.O_WRONLY | os.O_NONBLOCK)
        except OSError as error:
            if error.errno in (errno.ENXIO, errno.ENOENT):
                return Success(False)
            raise
        try:
            os.write(wake, b"\n")
        finally:
            os.close(wake)
        return Success(True)


class Arm:
    """One channel under test in its own scratch root, with its session and its timings."""

    def __init__(self, scratch: Path, channel_type: type[HookChannel]) -> None:
        program = scratch / "hooks" / "pretooluse"
        program.parent.mkdir()
        program.write_text(render_hook_program(str(scratch)))
        program.chmod(0o700)
        self.program = program
        self.channel = channel_type.create(str(scratch))
        facts = replay_facts(decisions="frame", hermetic="off", transcript_path="t", harness_version=None, model=None)
        self.session: Session = open_session(facts, "bench", "frame", FRAME)[0]
        self.written: list[float] = []
        self.printed: list[float] = []
        self.inside: list[float] = []

    def call(self, number: int) -> None:
        """One call through the real hook program: (start → answer written, start → hook exited,
        doorbell rang → answer written)."""
        started = time.perf_counter()
        hook = subprocess.Popen([str(self.program)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert hook.stdin is not None and hook.stdout is not None
        hook.stdin.write(request(number))
        hook.stdin.close()
        select.select([self.channel], [], [])
        rang = time.perf_counter()
        for key in self.channel.ring():
            self.session, effects = hook_request(self.session, key, self.channel.request(key))
            for effect in effects:
                if isinstance(effect, HookAnswer):
                    delivered = False
                    for answer_key in effect.keys:
                        delivered = self.channel.answer(answer_key, effect.body).value_or(False) or delivered
                    now = time.perf_counter()
                    self.written.append((now - started) * 1000)
                    self.inside.append((now - rang) * 1000)
                    self.session, _ = answered(self.session, delivered)
        answer = hook.stdout.read()
        hook.wait()
        self.printed.append((time.perf_counter() - started) * 1000)
        assert b'"permissionDecision":"allow"' in answer, answer


def report(name: str, arm: Arm, base_median: float) -> None:
    print(f"  {name}")
    rows = (
        ("hook start -> answer written", arm.written),
        ("hook start -> answer printed", arm.printed),
        ("doorbell rang -> answer written", arm.inside),
    )
    for row, values in rows:
        median = statistics.median(values)
        print(
            f"    {row:<31}  median {median:6.2f} ms  p99 {percentile(values, 0.99):6.2f} ms  "
            f"= {median / base_median:4.1f}x the baseline"
        )


def main() -> None:
    base = baseline()
    with tempfile.TemporaryDirectory(prefix="metaharness-bench-") as root:
        (Path(root) / "before").mkdir()
        (Path(root) / "after").mkdir()
        before, after = Arm(Path(root) / "before", ByNameChannel), Arm(Path(root) / "after", HookChannel)
        try:
            for number in range(CALLS):
                before.call(number)
                after.call(number)
        finally:
            before.channel.close()
            after.channel.close()
    base_median = statistics.median(base)
    print(f"hook channel, {CALLS} sequential calls per arm, interleaved (frame mode, allow)")
    print(f"  baseline: one bare sh start      median {base_median:6.2f} ms  p99 {percentile(base, 0.99):6.2f} ms")
    report("before: by name (the earlier code path)", before, base_median)
    report("after: by directory descriptor", after, base_median)
    for row, old, new in (("hook round trip (start -> printed)", before.printed, after.printed),
                          ("metaharness side (rang -> written)", before.inside, after.inside)):  # fmt: skip
        print(f"  after / before, {row}: {statistics.median(new) / statistics.median(old):4.2f}x (aim <= 1.1x)")
    print("  dominated by the hook program's own process starts (about nine per call); aim: median <= 20 ms")


if __name__ == "__main__":
    main()
