"""``metaharness run b10x`` with the loop's extensions (docs/loop-extensions.md): a plugin's skill reaches
the loop through the scratch copy, hooks travel as ``--hooks``, and a flag the loop declares without
building is refused before the loop is spawned."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from governed_b10x import LOOP, common, run, stream, workspace
from helpers.emulator import running_emulator
from loop_extensions import hook_program, hooks_file, plugin


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOME whose ``.local/bin/b10x-harness`` logs each argv to ``home/argv.log`` and runs the loop; the
    loop's own run starts in the confined view, where the caller's home is a throwaway tmpfs, so it logs
    its argv into its workspace (``argv.log`` in its directory), the one place there it may write."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    shim = home / ".local" / "bin" / "b10x-harness"
    shim.write_text(
        f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> {home / 'argv.log'}\n"
        'if [ "$1 $2" = "run --execution-path" ]; then printf \'%s\\n\' "$*" >> argv.log; fi\n'
        f"exec {LOOP} \"$@\"\n"
    )
    shim.chmod(0o755)
    return home


def invocations(home: Path, log_name: str = "argv.log") -> list[str]:
    log = home / log_name
    return log.read_text().splitlines() if log.exists() else []


def test_a_governed_run_offers_and_loads_the_plugin_skill_and_h1a_reads_ok(home: Path, tmp_path: Path) -> None:
    """The plugin's directory is not named as the plugin: H1a reads the name its plugin.json gives."""
    source = plugin(tmp_path / "plugins", "guide", directory_name="guide-checkout")
    record = tmp_path / "record.jsonl"
    work = workspace(tmp_path)
    with running_emulator("--scenario", "skill-load", "--record", str(record), "--record-bodies") as (url, _):
        done = run(home, ["--decisions", "observe", "--audit", "--plugin-dir", str(source), *common(url, work)])
    events = stream(done)
    requests = [json.loads(line) for line in record.read_text().splitlines()]
    assert ("Skills available to you; load one with the skill tool before you follow it:\n"
            "- `guide:planning` — Plan before you write.\n") in requests[0]["instruction_text"]
    assert requests[0]["answer"] == "call:skill" and "skill" in requests[0]["tool_names"]
    outputs = [item for item in requests[1]["body"]["input"] if item.get("type") == "function_call_output"]
    assert outputs[0]["output"] == "Write the plan first, then the code.\n"
    started = next(e for e in events if e["event"] == "session.started")
    assert started["skills"] == ["guide:planning"] and started["agents"] == ["guide:reviewer"]
    requested = next(e for e in events if e["event"] == "tool.requested")
    assert requested["name"] == "skill" and requested["input"] == {"name": "guide:planning"}
    report = done.stderr.decode().splitlines()
    assert any(line.startswith("  H1a  ok ") for line in report), report
    assert not [line for line in invocations(home) if line.startswith("run --execution-path")]
    loop_runs = invocations(work)
    assert len(loop_runs) == 1 and "--plugin-dir" in loop_runs[0] and str(source) not in loop_runs[0]


def test_governed_hooks_reach_the_loop_and_block(home: Path, tmp_path: Path) -> None:
    """The hook program and its interpreter are bound into the loop's view; it writes what it read into
    the workspace, the one place in the view it may write."""
    work = workspace(tmp_path)
    block = hook_program(tmp_path, "block", "print(json.dumps({'reason': 'not this file'}))\nsys.exit(2)\n", seen=work)
    hooks = hooks_file(tmp_path, [{"on": "before-call", "tools": ["file_read"], "command": [sys.executable, block]}])
    with running_emulator("--scenario", "flat-tool") as (url, _):
        done = run(home, ["--decisions", "observe", "--hooks", hooks, *common(url, work)])
    assert done.returncode == 0, done.stderr
    events = stream(done)
    result = next(e for e in events if e["event"] == "tool.result")
    assert result["call_id"] == "call_b10x_001" and result["is_error"] is True
    assert json.loads((work / "block.seen").read_text())["name"] == "file_read"
    assert not any(e["event"] == "warning" and e.get("code") == "hook-failed" for e in events)


@pytest.mark.parametrize(
    "flags",
    [
        ["--toolchain", "stable"],
        ["--driver", "DRIVER"],
        ["--substrate", "DRIVER"],
        ["--cgroup-root", "CGROUP"],
        ["--substrate-embedded"],
    ],
)
def test_a_declared_but_unbuilt_loop_flag_is_refused_before_the_spawn(home: Path, tmp_path: Path, flags: list[str]) -> None:
    work = tmp_path / "ws_run"
    work.mkdir()
    (tmp_path / "DRIVER").write_text("driver\n")
    (tmp_path / "CGROUP").mkdir()
    flags = [str(tmp_path / flag) if flag in ("DRIVER", "CGROUP") else flag for flag in flags]
    done = run(home, ["--decisions", "observe", *flags, *common("http://127.0.0.1:9/v1", work)])
    assert done.returncode == 2 and done.stdout == b""
    version = done.stderr.decode().split(f"{home}/.local/bin/b10x-harness")[0].split()[-2]
    assert done.stderr.decode() == (
        f"metaharness: not-built: {flags[0]} is not built in this build: b10x-harness {version} at "
        f"{home}/.local/bin/b10x-harness declares {flags[0]} but does not build it, so the loop would refuse the "
        "run at start\n"
    )
    assert version[:1].isdigit()
    assert sorted(invocations(home)) == ["--version", "run --help"]


def test_a_prompt_that_is_not_utf8_is_refused_before_anything_starts(home: Path, tmp_path: Path) -> None:
    done = run(home, ["--decisions", "observe", "-p", os.fsdecode(b"\xff\xfe"), "--model", "m",
                      "--model-endpoint", "http://127.0.0.1:9/v1"])
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr == (b"metaharness: prompt-not-utf8: -p/--prompt is not UTF-8 text: the byte at position 0 "
                           b"does not decode; pass the task as UTF-8\n")
    assert invocations(home) == []


def test_an_empty_openai_api_key_is_refused_before_anything_starts(home: Path, tmp_path: Path) -> None:
    import subprocess

    from governed_b10x import METAHARNESS

    env = {"HOME": str(home), "PATH": os.environ["PATH"], "OPENAI_API_KEY": ""}
    done = subprocess.run(
        [str(METAHARNESS), "run", "b10x", "--decisions", "observe", "--credentials", "api-key",
         "-p", "go", "--model", "m", "--model-endpoint", "http://127.0.0.1:9/v1"],
        env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr == (b"metaharness: api-key-missing: --credentials api-key on b10x: OPENAI_API_KEY is empty "
                           b"in the caller's environment\n")
    assert invocations(home) == []
