"""``run claude`` refuses before anything starts, by name, and leaves no scratch root (docs/hermetic.md#refusal-order,
docs/adapters/common.md#vendor-launch-order; docs/adapters/claude.md; docs/adapters/common.md#endpoint-route)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from stand_in import stand_in


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    environment = {"HOME": os.environ.get("HOME", "/root"), "PATH": os.environ["PATH"], "TMPDIR": str(temp), **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "metaharness.shell", "run", "claude", "-p", "x", *args],
        capture_output=True, text=True, env=environment, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert list(temp.glob("metaharness-*")) == [], "a refusal left a scratch root behind"
    return done.returncode, done.stdout, done.stderr


def refused(result: tuple[int, str, str], code: str) -> str:
    returncode, stdout, stderr = result
    assert (returncode, stdout) == (2, ""), stderr
    assert len(stderr.splitlines()) == 1 and stderr.startswith(f"metaharness: {code}: "), stderr
    return stderr


def test_operator_login_without_a_credential_file(tmp_path: Path) -> None:
    message = refused(run(tmp_path, "--decisions", "observe", env={"CLAUDE_CONFIG_DIR": str(tmp_path / "none")}),
                      "credential-file-missing")  # fmt: skip
    assert str(tmp_path / "none" / ".credentials.json") in message


@pytest.mark.parametrize("content", [None, b"{not json", b'{"claudeAiOauth":{}}'])
def test_loopback_custody_that_cannot_be_read(tmp_path: Path, content: bytes | None) -> None:
    custody = tmp_path / "custody"
    custody.mkdir()
    if content is not None:
        (custody / ".credentials.json").write_bytes(content)
    refused(run(tmp_path, "--credentials", "loopback", "--decisions", "observe", env={"CLAUDE_CONFIG_DIR": str(custody)}),
            "loopback-custody-unreadable")  # fmt: skip


def test_a_missing_cwd(tmp_path: Path) -> None:
    refused(run(tmp_path, "--credentials", "none", "--cwd", str(tmp_path / "nope")), "cwd-unusable")


def test_no_claude_on_the_childs_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    if any(Path(d, "claude").exists() for d in ("/usr/local/bin", "/usr/bin", "/bin")):
        pytest.skip("a claude is installed system-wide")
    refused(run(tmp_path, "--credentials", "none", "--decisions", "observe", env=env), "program-not-found")


def test_frame_refusals(tmp_path: Path) -> None:
    broken = tmp_path / "frame.json"
    broken.write_text("{}")
    refused(run(tmp_path, "--credentials", "none", "--frame", str(broken)), "frame-invalid")
    refused(run(tmp_path, "--credentials", "none", "--frame", str(tmp_path / "gone.json")), "frame-unreadable")


def test_an_unusable_plugin_dir(tmp_path: Path) -> None:
    empty = tmp_path / "plugin"
    empty.mkdir()
    refused(run(tmp_path, "--credentials", "none", "--decisions", "observe", "--plugin-dir", str(empty)),
            "plugin-dir-unusable")  # fmt: skip


def test_a_prompt_past_max_arg_strlen_is_not_refused_since_it_goes_on_stdin(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", ("import sys; from metaharness.shell.cli import main; sys.argv=['metaharness','run',"
         "'claude','--credentials','none','--decisions','observe','-p','x'*140000]; main()")],
        capture_output=True, text=True, env={"HOME": os.environ.get("HOME", "/root"), "PATH": os.environ["PATH"],
                                             "TMPDIR": str(temp)},
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode != 2 and "argument-too-long" not in done.stderr, done.stderr
    assert '"event":"session.started"' in done.stdout


def test_the_owned_surface_is_refused_rather_than_run_native(tmp_path: Path) -> None:
    message = refused(run(tmp_path, "--credentials", "none", "--tool-surface", "owned"), "not-built")
    assert "--tool-surface owned" in message


UNCONFIRMING = """
import json
request = json.loads(sys.stdin.buffer.readline())
reply = {"subtype": "success", "request_id": request["request_id"], "response": {"hooks_applied": True}}
sys.stdout.buffer.write(json.dumps({"type": "control_response", "response": reply}).encode() + b"\\n")
sys.stdout.buffer.flush()
turn = sys.stdin.buffer.readline()
open(sys.argv[0] + ".turn", "wb").write(turn)
"""


def test_a_cli_that_does_not_confirm_its_hooks_is_refused_before_the_turn(tmp_path: Path) -> None:
    program = stand_in(tmp_path, "claude", UNCONFIRMING)
    message = refused(run(tmp_path, "--credentials", "none", "--decisions", "observe", "--confine", "off",
                          env={"HOME": str(tmp_path)}), "hooks-unconfirmed")  # fmt: skip
    assert "hook_on_failure_supported: true" in message
    turn = program.with_name("claude.turn")
    assert not turn.exists() or turn.read_bytes() == b""  # killed waiting, or saw its stdin close: no turn came
