"""Every credential refusal says what to do next, for its kind and mode (docs/hermetic.md#credentials):
``metaharness run`` as a real process under a HOME with no login files."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from vendor_cli import home_linking_the_clis, pinned_cli

METAHARNESS = str(Path(sys.executable).with_name("metaharness"))
CLAUDE_LOGIN = "log in once with `claude` and its /login under this HOME"
CODEX_LOGIN = "log in once with `codex login --with-api-key` under this HOME"
GEMINI_CUSTODY = "write GEMINI_API_KEY=<key> into ~/.gemini/.env under this HOME (Gemini CLI's own place for its key)"


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


def test_doctor_checks_the_credential_and_endpoint_a_run_would_use(tmp_path: Path) -> None:
    """``doctor claude`` under a HOME with no login says what ``run claude`` would, and exits 1; with
    ``--credentials none`` and a dead ``--model-endpoint`` it names the endpoint."""
    if pinned_cli("claude") is None:
        pytest.skip("the pinned Claude Code is not installed")
    home = home_linking_the_clis(tmp_path / "home")
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}

    def doctor(*options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([METAHARNESS, "doctor", "claude", *options], capture_output=True, env=env, timeout=60,
                              check=False, text=True)  # fmt: skip

    missing = doctor()
    line = next(text for text in missing.stdout.splitlines() if text.startswith("credential: "))
    assert line.startswith("credential: credential-file-missing: --credentials operator-login on claude: ")
    assert CLAUDE_LOGIN in line and missing.returncode == 1
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = doctor("--credentials", "none", "--model-endpoint", f"http://127.0.0.1:{port}")
    shown = dead.stdout.splitlines()
    assert "credential: ok — --credentials none has what a run needs" in shown
    assert any(text.startswith(f"endpoint: endpoint-unreachable: --model-endpoint http://127.0.0.1:{port}: ") for text in shown)
    assert dead.returncode == 1
    assert doctor("--credentials", "none").returncode == 0, "the binary itself is on its pin with every flag"


def test_doctor_gemini_with_no_custody_file_is_told_where_the_key_goes(tmp_path: Path) -> None:
    """Gemini's loopback custody is ``~/.gemini/.env``, Gemini CLI's own place for its key: doctor names it
    missing and says what to write there, or which other mode to use."""
    if pinned_cli("gemini") is None:
        pytest.skip("the pinned Gemini CLI is not installed")
    home = home_linking_the_clis(tmp_path / "home")
    done = subprocess.run([METAHARNESS, "doctor", "gemini", "--credentials", "loopback"], capture_output=True, text=True,
                          env={"HOME": str(home), "PATH": os.environ["PATH"]}, timeout=60, check=False)  # fmt: skip
    line = next(text for text in done.stdout.splitlines() if text.startswith("credential: "))
    assert line.startswith(f"credential: loopback-custody-unreadable: {home}/.gemini/.env: No such file or directory; ")
    assert GEMINI_CUSTODY in line and "--credentials api-key with GEMINI_API_KEY set" in line and done.returncode == 1
