"""The memory canary of the pinned Claude Code (docs/hermetic.md#claudes-memory-canary,
docs/adapters/claude.md#memory-walk; docs/adapters/common.md#pin-move-checks).

A distinct string is planted in every memory shape above the working directory and in
``$HOME/.claude/CLAUDE.md``; the real binary is driven against the emulator (recording request
bodies) with the launch's flags, ``--setting-sources ""`` and a fresh config home. A shape is loaded
when its string reaches a request body. The control run, without ``--setting-sources ""``, shows
the canary can see a loaded shape, so an empty result is evidence and not a blind spot.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers.emulator import running_emulator
from vendor_cli import pinned_cli

from metaharness.pure.claude.launch import CANARY_LOADED
from metaharness.pure.claude.vendor import PINS

SHAPES = {
    "CLAUDE.md": "CLAUDE.md",
    "CLAUDE.local.md": "CLAUDE.local.md",
    ".claude/CLAUDE.md": ".claude/CLAUDE.md",
    ".claude/rules/*.md": ".claude/rules/canary.md",
    "AGENTS.md": "AGENTS.md",
}


pytestmark = pytest.mark.skipif(
    pinned_cli("claude") is None, reason=f"the pinned Claude Code {PINS[0]} is not installed (vendors/install.sh)"
)


def canary(tmp_path: Path, sources_off: bool) -> dict[str, bool]:
    """Which planted strings reached a request body, per shape (and ``$HOME`` for the home file)."""
    program = pinned_cli("claude")
    assert program is not None
    above = tmp_path / "above"
    work = above / "work"
    work.mkdir(parents=True)
    strings = {shape: f"MH-CANARY-{index}-{shape.replace('/', '-').replace('*', 'x')}" for index, shape in enumerate(SHAPES)}
    for shape, relative in SHAPES.items():
        path = above / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(strings[shape] + "\n")
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    strings["$HOME/.claude/CLAUDE.md"] = "MH-CANARY-HOME"
    (home / ".claude" / "CLAUDE.md").write_text("MH-CANARY-HOME\n")
    config = tmp_path / "claude-home"
    config.mkdir()
    record = tmp_path / "bodies.jsonl"
    with running_emulator("--scenario", "text", "--record", str(record), "--record-bodies") as (base_url, _):
        env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": str(tmp_path),
               "CLAUDE_CONFIG_DIR": str(config), "ANTHROPIC_BASE_URL": base_url.removesuffix("/v1"),
               "ANTHROPIC_AUTH_TOKEN": "metaharness-model-endpoint", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}  # fmt: skip
        argv = [program, "-p", "say hello", "--output-format", "stream-json", "--verbose", "--strict-mcp-config"]
        argv += ["--setting-sources", ""] if sources_off else []
        subprocess.run(argv, cwd=work, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=120, check=False)
    bodies = "".join(json.dumps(json.loads(line)["body"]) for line in record.read_text().splitlines())
    assert bodies, "the binary sent no request"
    return {shape: text in bodies for shape, text in strings.items()}


def test_under_the_launch_flags_the_canary_matches_the_recorded_entry(tmp_path: Path) -> None:
    loaded = canary(tmp_path, sources_off=True)
    recorded = CANARY_LOADED[PINS[0]]
    assert {shape for shape, seen in loaded.items() if seen} == set(recorded)


def test_the_control_run_shows_the_canary_sees_a_loaded_shape(tmp_path: Path) -> None:
    loaded = canary(tmp_path, sources_off=False)
    assert loaded["CLAUDE.md"] and loaded[".claude/rules/*.md"]
