"""Loop-extension benchmarks (issue 13, docs/loop-extensions.md), printed as ratios against baselines
measured in the same run.

1. A governed ``metaharness run b10x --plugin-dir P`` relative to the same run without the plugin, on the
   ``text`` scenario (one model call either way): the plugin adds a scratch copy, the ``run --help``
   probe (concurrent with ``--version``, both awaited before the spawn) and the loop's skill loading.
   The price is one more short process start before the spawn: aim <= 1.6x on a run this short.
2. ``b10x-harness run`` with 200 skills in one ``--skills-dir`` relative to the same run with none (aim
   <= 1.10x).
3. An app-server turn (``turn/start`` to ``turn/completed``, one dynamic tool call answered) relative to
   a whole ``b10x-harness run`` of the same two model calls: reported.

Run: ``.venv/bin/python benchmarks/bench_loop_extensions.py``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BIN = Path(sys.executable).parent
RUNS = 10
SKILLS = 200


@contextmanager
def emulator(scenario: str) -> Iterator[str]:
    process = subprocess.Popen([str(BIN / "b10x-emulator"), "--scenario", scenario], stdout=subprocess.PIPE)
    assert process.stdout is not None
    try:
        yield json.loads(process.stdout.readline())["base_url"]
    finally:
        process.terminate()
        process.wait()


def median_seconds(argv: list[str], env: dict[str, str] | None = None) -> float:
    timings = []
    for _ in range(RUNS):
        begin = time.perf_counter()
        subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
        timings.append(time.perf_counter() - begin)
    return statistics.median(timings)


def write_plugin(root: Path, skills: int) -> Path:
    directory = root / "guide"
    (directory / ".claude-plugin").mkdir(parents=True)
    (directory / ".claude-plugin" / "plugin.json").write_text('{"name":"guide"}')
    for number in range(skills):
        (directory / "skills" / f"s{number:03d}").mkdir(parents=True)
        (directory / "skills" / f"s{number:03d}" / "SKILL.md").write_text(
            f"---\nname: s{number:03d}\ndescription: Skill number {number}.\n---\n" + "Do the thing.\n" * 50
        )
    return directory


def governed_with_and_without_plugin(root: Path) -> tuple[float, float]:
    home = root / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(BIN / "b10x-harness")
    work = root / "work"
    work.mkdir()
    plugin = write_plugin(root / "plugins", 1)
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "")}
    with emulator("text") as base_url:
        argv = [str(BIN / "metaharness"), "run", "b10x", "--decisions", "observe", "-p", "go", "--model",
                "b10x-emulated", "--model-endpoint", base_url, "--cwd", str(work)]
        without = median_seconds(argv, env)
        with_plugin = median_seconds([*argv, "--plugin-dir", str(plugin)], env)
    return with_plugin, without


def loop_with_and_without_skills(root: Path) -> tuple[float, float]:
    work = root / "loop-work"
    work.mkdir()
    plugin = write_plugin(root / "many", SKILLS)
    with emulator("text") as base_url:
        argv = [str(BIN / "b10x-harness"), "run", "--json", "--no-session", "--workspace", str(work), "--base-url",
                base_url, "--model", "b10x-emulated", "--input", "go"]
        without = median_seconds(argv)
        with_skills = median_seconds([*argv, "--skills-dir", str(plugin / "skills")])
    return with_skills, without


def bridge_turn_against_run(root: Path) -> tuple[float, float]:
    tool = {"name": "lookup", "description": "Look up.",
            "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}
    with emulator("bridge-tool") as base_url:
        server = subprocess.Popen(
            [str(BIN / "b10x-harness"), "app-server", "--base-url", base_url, "--model", "b10x-emulated"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert server.stdin is not None and server.stdout is not None

        def send(message: dict) -> None:
            assert server.stdin is not None
            server.stdin.write(json.dumps(message).encode() + b"\n")
            server.stdin.flush()

        send({"id": 1, "method": "initialize", "params": {"capabilities": {"experimentalApi": True}}})
        send({"id": 2, "method": "thread/start", "params": {"dynamicTools": [tool]}})
        timings = []
        for number in range(RUNS):
            begin = time.perf_counter()
            send({"id": 10 + number, "method": "turn/start",
                  "params": {"threadId": "thread_b10x_1", "input": [{"type": "text", "text": "go"}]}})
            while True:
                message = json.loads(server.stdout.readline())
                if message.get("method") == "item/tool/call":
                    send({"id": message["id"], "result": {
                        "contentItems": [{"type": "inputText", "text": "found"}], "success": True}})
                if message.get("method") == "turn/completed":
                    break
            timings.append(time.perf_counter() - begin)
        server.stdin.close()
        server.wait()
    work = root / "run-work"
    work.mkdir()
    (work / "README.md").write_text("hello harness\n")
    with emulator("flat-tool") as base_url:
        whole = median_seconds([str(BIN / "b10x-harness"), "run", "--json", "--no-session", "--workspace", str(work),
                                "--base-url", base_url, "--model", "b10x-emulated", "--input", "go"])
    return statistics.median(timings), whole


def main() -> None:
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        with_plugin, without = governed_with_and_without_plugin(root)
        print(f"governed run with --plugin-dir {with_plugin:.3f}s vs without {without:.3f}s — "
              f"{with_plugin / without:.2f}x (aim <= 1.6x)")
        with_skills, bare = loop_with_and_without_skills(root)
        print(f"loop run with {SKILLS} skills {with_skills:.3f}s vs none {bare:.3f}s — "
              f"{with_skills / bare:.2f}x (aim <= 1.10x)")
        turn, whole = bridge_turn_against_run(root)
        print(f"app-server turn with one client tool call {turn:.3f}s vs a whole loop run of two model calls "
              f"{whole:.3f}s — {turn / whole:.2f}x (reported)")


if __name__ == "__main__":
    main()
