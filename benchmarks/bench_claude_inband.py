"""What deciding Claude Code's calls in-band costs per call (issue 22), against the bare binary measured in the
same run, with the Claude Agent SDK's own PreToolUse callback as the anchor.

One scenario, ``claude-read-steps`` with 20 ``Read`` calls of small files on one ``b10x-emulator`` (a ``Read``
costs the CLI a few ms, so the decision is not lost in a shell's start-up), three ways:

* **bare** — the pinned ``claude`` alone (``-p --output-format stream-json --verbose``, ``--allowedTools Read``:
  nothing decides, every call runs);
* **governed** — ``metaharness run claude`` with a frame admitting ``file.read`` (``--confine off``, so only
  the decision seam differs), every call a ``hook_callback`` answered on the CLI's stdin;
* **sdk** — the same binary driven by the Python ``claude-agent-sdk`` with a PreToolUse callback that allows,
  installed by this benchmark only into a throwaway venv (it is no project dependency; skipped when ``pip``
  cannot fetch it).

Per call the span is the CLI's own clock: the ``timestamp`` of the ``assistant`` record announcing the
``tool_use`` to that of the ``user`` record carrying its ``tool_result`` — the decision plus the read.
Reported: each arm's median and p90 span, and the added ms per call (median span − bare median span); aim
≤ +2 ms for governed, at or below the SDK's. Also the whole run's wall time.

Run: ``.venv/bin/python benchmarks/bench_claude_inband.py [CALLS [ROUNDS]]``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from metaharness.pure.frames import frame_document, seal_frame

CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
"""Each arm runs this many times, the arms interleaved, so a shared machine's load drifts over all of them alike."""
BIN = Path(sys.executable).parent
SDK_DRIVER = """
import sys, anyio
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, query

async def allow(hook_input, tool_use_id, context):
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}

async def main():
    options = ClaudeAgentOptions(cli_path=sys.argv[1], cwd=sys.argv[2], setting_sources=[],
                                 hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[allow])]})
    async for _ in query(prompt=sys.argv[3], options=options):
        pass

anyio.run(main)
"""
TEE = '#!/bin/sh\n"{real}" "$@" | tee -a "{log}"\n'
"""The SDK arm's ``cli_path``: the pinned binary, its stdout also kept so its records can be timed."""


def prompt(tmp: Path) -> str:
    """The task naming one small file per call, written under ``tmp/data``."""
    data = tmp / "data"
    data.mkdir(exist_ok=True)
    for n in range(CALLS):
        (data / f"note-{n}.txt").write_text(f"note {n}\n")
    return "read the notes\n" + "".join(f"$ {data / f'note-{n}.txt'}\n" for n in range(CALLS))


def spans(lines: list[bytes]) -> list[float]:
    """Per call, ms from the ``tool_use`` record's timestamp to its ``tool_result`` record's."""
    announced: dict[str, datetime] = {}
    out: list[float] = []
    for raw in lines:
        try:
            record: Any = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict) or "timestamp" not in record:
            continue
        at = datetime.fromisoformat(record["timestamp"])
        content = record.get("message", {}).get("content")
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_use" and record["type"] == "assistant":
                announced[block["id"]] = at
            if block.get("type") == "tool_result" and block.get("tool_use_id") in announced:
                out.append((at - announced.pop(block["tool_use_id"])).total_seconds() * 1000)
    assert len(out) == CALLS, f"{len(out)} of {CALLS} calls completed"
    return out


def environment(tmp: Path, root: str) -> dict[str, str]:
    home = tmp / "claude-home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", str(tmp)), "CLAUDE_CONFIG_DIR": str(home),
            "ANTHROPIC_BASE_URL": root, "ANTHROPIC_AUTH_TOKEN": "bench", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "TMPDIR": str(tmp)}  # fmt: skip


def workspace(tmp: Path, name: str) -> Path:
    work = tmp / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    return work


def bare(claude: str, root: str, tmp: Path) -> tuple[list[float], float]:
    argv = [claude, "-p", prompt(tmp), "--output-format", "stream-json", "--verbose", "--setting-sources", "",
            "--allowedTools", "Read"]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=workspace(tmp, "bare"), env=environment(tmp, root), capture_output=True, check=True)
    return spans(done.stdout.splitlines()), time.perf_counter() - started


def governed(root: str, tmp: Path) -> tuple[list[float], float]:
    frame = tmp / "read.frame.json"
    raw = {"format": "metaharness.frame/1", "workflow": {"id": "bench", "version": "1"}, "node": {"id": "n"},
           "step": {"workflow": "bench", "state": "s", "index": 0, "attempt": 1}, "prior": [], "obligations": [],
           "reaching": [], "next": [], "handoff": {"handoff": "none"}, "operations": [{"op": "file.read"}]}  # fmt: skip
    frame.write_bytes(frame_document(seal_frame(raw).unwrap()))
    retained = tmp / "retained"
    shutil.rmtree(retained, ignore_errors=True)
    retained.mkdir()
    argv = [str(BIN / "metaharness"), "run", "claude", "--credentials", "none", "--model-endpoint", root,
            "--cwd", str(workspace(tmp, "governed")), "-p", prompt(tmp), "--frame", str(frame), "--confine", "off",
            "--retain-dir", str(retained)]  # fmt: skip
    env = {**os.environ, "TMPDIR": str(tmp)}
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, stdin=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - started
    assert done.returncode == 0, done.stderr.decode()
    (transcript,) = retained.glob("*/transcript.jsonl")
    return spans(transcript.read_bytes().splitlines()), wall


def sdk_venv(tmp: Path) -> Path | None:
    """A throwaway venv holding ``claude-agent-sdk``, or ``None`` when ``pip`` cannot fetch it."""
    venv = tmp / "sdk-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    fetched = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "claude-agent-sdk"], capture_output=True,
                             check=False)  # fmt: skip
    if fetched.returncode != 0:
        print(f"  sdk: skipped, pip could not install claude-agent-sdk: {fetched.stderr.decode()[-200:]}")
        return None
    return venv


def sdk(venv: Path, claude: str, root: str, tmp: Path) -> tuple[list[float], float]:
    log = tmp / "sdk-stdout.jsonl"
    log.unlink(missing_ok=True)
    wrapper = tmp / "claude-tee"
    wrapper.write_text(TEE.format(real=claude, log=log))
    wrapper.chmod(0o700)
    argv = [str(venv / "bin" / "python"), "-c", SDK_DRIVER, str(wrapper), str(workspace(tmp, "sdk")), prompt(tmp)]
    started = time.perf_counter()
    subprocess.run(argv, env=environment(tmp, root), capture_output=True, check=True)
    return spans(log.read_bytes().splitlines()), time.perf_counter() - started


def row(name: str, values: list[float], wall: float, base: float) -> str:
    median = statistics.median(values)
    p90 = sorted(values)[int(0.9 * (len(values) - 1))]
    return (f"  {name:<9} median {median:6.2f} ms  p90 {p90:6.2f} ms  added {median - base:+6.2f} ms/call  "
            f"run {wall:5.2f} s")  # fmt: skip


def main() -> None:
    claude = shutil.which("claude")
    assert claude is not None, "the pinned claude is not on PATH"
    claude = os.path.realpath(claude)
    emulator = subprocess.Popen([str(BIN / "b10x-emulator"), "--scenario", "claude-read-steps"], stdout=subprocess.PIPE)
    try:
        assert emulator.stdout is not None
        root = json.loads(emulator.stdout.readline())["base_url"].removesuffix("/v1")
        with tempfile.TemporaryDirectory(prefix="metaharness-bench-") as scratch:
            tmp = Path(scratch)
            venv = sdk_venv(tmp)
            arms: dict[str, tuple[list[float], float]] = {"bare": ([], 0.0), "governed": ([], 0.0)}
            if venv is not None:
                arms["sdk"] = ([], 0.0)
            for _ in range(ROUNDS):
                runs = {"bare": lambda: bare(claude, root, tmp), "governed": lambda: governed(root, tmp)}
                if venv is not None:
                    runs["sdk"] = lambda: sdk(venv, claude, root, tmp)
                for name, run in runs.items():
                    values, wall = run()
                    arms[name] = (arms[name][0] + values, arms[name][1] + wall / ROUNDS)
    finally:
        emulator.terminate()
        emulator.wait()
    base = statistics.median(arms["bare"][0])
    print(f"claude in-band decisions, {CALLS} sequential Read calls on one emulator, {ROUNDS} interleaved rounds "
          "(span: tool_use -> tool_result; run: mean wall time)")
    for name, (values, wall) in arms.items():
        print(row(name, values, wall, base))
    print("  aim: governed added <= +2 ms/call median, at or below the sdk's")


if __name__ == "__main__":
    main()
