"""Per-call decision latency through the hook channel, codex's and gemini's hook programs, against a bare
process start measured in the same run.

Each call starts the real ``hooks/pretooluse`` program (codex's ``PreToolUse`` one, then gemini's
``BeforeTool`` one) with a request on its stdin, as the vendor does, waits on the doorbell, reads the
request, decides it through the pure decision desk (frame mode, an admitting frame) and writes the
answer through the channel; the call ends when the hook has printed the answer and exited. The baseline
is what the vendor pays for any hook at all: one bare process start fed the same request (``sh -c 'cat
>/dev/null'``). The three are interleaved call by call, so a shared machine's load falls on all alike.
Reported: median and p90 of each, each hook's median over the baseline's (aim: ≤ +4 ms), and the programs
one call executes (``strace -f -e trace=execve``, when strace is installed: the hook itself only).

Run: ``.venv/bin/python benchmarks/bench_hook_channel.py [CALLS]`` (default 100).
"""

from __future__ import annotations

import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from metaharness.pure.decisions import Answer, Desk, PresentedCall, open_desk, present
from metaharness.pure.events import Allow
from metaharness.pure.frames import Operation, seal_frame
from metaharness.pure.gemini.hook import gemini_hook_answer, render_gemini_hook
from metaharness.pure.hook_channel import pretooluse_answer, read_hook_request, render_hook_program
from metaharness.pure.jsonline import compact
from metaharness.shell.hook_channel import HookChannel

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
FRAME = seal_frame(
    {"format": "metaharness.frame/1", "workflow": {"id": "bench", "version": "1"}, "node": {"id": "n"},
     "step": {"workflow": "bench", "state": "s", "index": 0, "attempt": 1}, "prior": [], "obligations": [],
     "reaching": [], "next": [], "handoff": {"handoff": "none"}, "operations": [{"op": "shell"}]}
).unwrap()  # fmt: skip
ARMS: dict[str, tuple[Callable[[str], str], bytes]] = {
    "codex": (render_hook_program, pretooluse_answer(permissionDecision="allow")),
    "gemini": (render_gemini_hook, gemini_hook_answer(Allow())),
}


def request(number: int) -> bytes:
    return compact(
        {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
         "tool_input": {"command": "echo emulated"}, "tool_use_id": f"toolu_{number:05d}"}
    )  # fmt: skip


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def bare(number: int) -> float:
    """One bare ``sh`` start fed the request, in ms."""
    started = time.perf_counter()
    subprocess.run(["sh", "-c", "cat >/dev/null"], input=request(number), check=True)
    return (time.perf_counter() - started) * 1000


class Arm:
    """One kind's hook program installed on its own channel, with its desk."""

    def __init__(self, scratch: Path, kind: str) -> None:
        render, self.body = ARMS[kind]
        self.program = scratch / "hooks" / "pretooluse"
        self.program.parent.mkdir(parents=True)
        self.program.write_text(render(str(scratch)))
        self.program.chmod(0o700)
        self.channel = HookChannel.create(str(scratch))
        self.desk: Desk = open_desk("frame", FRAME)

    def call(self, number: int, prefix: tuple[str, ...] = ()) -> float:
        """One decided call, hook start to hook exit, in ms."""
        started = time.perf_counter()
        hook = subprocess.Popen([*prefix, str(self.program)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert hook.stdin is not None and hook.stdout is not None
        hook.stdin.write(request(number))
        hook.stdin.close()
        select.select([self.channel], [], [])
        for key in self.channel.ring():
            call = read_hook_request(key, self.channel.request(key) or b"")
            presented = PresentedCall(call_id=call.call_id, name=call.name, input=call.input, seam="hook",
                                      operations=(Operation("shell"),), subjects=("proc:echo",))  # fmt: skip
            self.desk, effects = present(self.desk, presented)
            for effect in effects:
                if isinstance(effect, Answer):
                    assert isinstance(effect.decision, Allow)
                    self.channel.answer(key, self.body)
        answer = hook.stdout.read()
        assert hook.wait() == 0 and answer == self.body, answer
        return (time.perf_counter() - started) * 1000


def executed(arm: Arm, scratch: Path) -> str:
    """The programs one call executes, from ``strace -f -e trace=execve``."""
    strace = shutil.which("strace")
    if strace is None:
        return "strace not installed"
    trace = scratch / "execve.trace"
    arm.call(CALLS, (strace, "-f", "-qq", "-e", "trace=execve", "-o", str(trace)))
    programs = [line.split('"')[1] for line in trace.read_text().splitlines() if "execve(" in line and "= 0" in line]
    return f"{len(programs)} execve: {', '.join(programs)}"


def main() -> None:
    samples: dict[str, list[float]] = {"bare sh start": [], "codex hook": [], "gemini hook": []}
    with tempfile.TemporaryDirectory(prefix="metaharness-bench-") as scratch:
        arms = {kind: Arm(Path(scratch, kind), kind) for kind in ARMS}
        for number in range(CALLS):
            samples["bare sh start"].append(bare(number))
            for kind, arm in arms.items():
                samples[f"{kind} hook"].append(arm.call(number))
        traced = {kind: executed(arm, Path(scratch)) for kind, arm in arms.items()}
        for arm in arms.values():
            arm.channel.close()
    base = statistics.median(samples["bare sh start"])
    print(f"hook channel, {CALLS} interleaved calls each (frame mode, allow; start -> answer printed, exited)")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"  {name:<14} median {median:6.2f} ms  p90 {p90(values):6.2f} ms  {median - base:+6.2f} ms over bare")
    for kind, line in traced.items():
        print(f"  {kind} call executes: {line}")
    print("  aim: a hook's median <= +4 ms over the bare start; one execve, the hook itself")


if __name__ == "__main__":
    main()
