"""Every credential refusal says what to do next, for its kind and mode (docs/hermetic.md#credentials):
``metaharness run`` as a real process under a HOME with no login files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

METAHARNESS = str(Path(sys.executable).with_name("metaharness"))
CLAUDE_LOGIN = "log in once with `claude` and its /login under this HOME"
CODEX_LOGIN = "log in once with `codex login --with-api-key` under this HOME"


def refusal(home: Path, *args: str) -> str:
    done = subprocess.run([METAHARNESS, "run", *args, "-p", "x", "--decisions", "observe"], capture_output=True,
                          env={"HOME": str(home), "PATH": os.environ["PATH"]}, stdin=subprocess.DEVNULL, timeout=60,
                          check=False, text=True)  # fmt: skip
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    return done.stderr.strip()


@pytest.mark.parametrize("confine", ["on", "off"])
def test_codex_with_no_login_is_told_to_log_in_not_to_change_confinement(tmp_path: Path, confine: str) -> None:
    line = refusal(tmp_path, "codex", "--confine", confine)
    assert line.startswith(f"metaharness: credential-file-missing: --credentials operator-login on codex: {tmp_path}/.codex/auth.json is missing; ")
    assert CODEX_LOGIN in line and "--credentials api-key with OPENAI_API_KEY set" in line and "--confine" not in line


def test_claude_with_no_login_is_told_how_to_log_in(tmp_path: Path) -> None:
    line = refusal(tmp_path, "claude")
    assert line.startswith(f"metaharness: credential-file-missing: --credentials operator-login on claude: {tmp_path}/.claude/.credentials.json is missing; ")
    assert CLAUDE_LOGIN in line and "ANTHROPIC_API_KEY" in line


@pytest.mark.parametrize(("kind", "advice"), [("claude", CLAUDE_LOGIN), ("codex", CODEX_LOGIN)])
def test_loopback_with_no_custody_file_is_told_where_the_token_comes_from(tmp_path: Path, kind: str, advice: str) -> None:
    line = refusal(tmp_path, kind, "--credentials", "loopback")
    assert line.startswith("metaharness: loopback-custody-unreadable: ")
    assert "--credentials loopback takes its token from the operator's login file: " in line and advice in line


def test_a_chatgpt_login_under_loopback_is_told_to_use_a_key(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "auth.json").write_text(json.dumps({"tokens": {"access_token": "chatgpt-plan"}}))
    line = refusal(tmp_path, "codex", "--credentials", "loopback")
    assert line.startswith("metaharness: loopback-chatgpt-login: ") and "codex login --with-api-key" in line
