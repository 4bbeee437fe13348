"""The ``metaharness`` console script as a user meets it: the eight verbs, help, usage refusals, the
verb that refuses ``audit-not-built``, and the top-level guard (docs/hermetic.md#exit-codes;
docs/cli.md#verbs, #audit)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

VERBS = ["run", "capabilities", "conformance", "doctor", "audit", "project", "mcp-serve", "replay"]
AUDIT_LINE = (
    "metaharness: audit-not-built: audit is not built in this milestone: it needs the launch facts a "
    "transcript metaharness did not launch cannot carry (the planned cwd, the declared credentials, the "
    "imposed rows). It is declared here so the verb surface does not change when it arrives\n"
)


def metaharness(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    """Run the installed console script as a user would."""
    script = Path(sys.executable).with_name("metaharness")
    return subprocess.run(
        [str(script), *args], stdout=stdout, stderr=subprocess.PIPE, text=True, check=False, timeout=60
    )


def assert_refused(result: subprocess.CompletedProcess[str], code: str) -> str:
    """Exactly one stderr line ``metaharness: <code>: …``, nothing on stdout, exit 2; the message."""
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"metaharness: {code}: "), lines[0]
    assert result.stderr.endswith("\n")
    return lines[0][len(f"metaharness: {code}: ") :]


def test_help_lists_exactly_the_eight_verbs_on_stdout() -> None:
    result = metaharness("--help")
    assert result.returncode == 0
    assert result.stderr == ""
    section = result.stdout.split("Commands:\n", 1)[1]
    listed = [line.split()[0] for line in section.splitlines() if line.startswith("  ") and line.strip()]
    assert listed == VERBS


@pytest.mark.parametrize("verb", VERBS)
def test_each_verb_prints_help_on_stdout_and_exits_0(verb: str) -> None:
    result = metaharness(verb, "-h")
    assert result.returncode == 0
    assert result.stderr == ""
    assert result.stdout.startswith(f"Usage: metaharness {verb}")


def test_python_dash_m_runs_the_same_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "metaharness.shell", "capabilities", "b10x", "--render"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout == metaharness("capabilities", "b10x", "--render").stdout


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["launch"],
        ["run"],
        ["run", "aider", "-p", "x"],
        ["run", "b10x", "--no-such-option"],
        ["run", "b10x", "--model"],
        ["run", "b10x", "--decisions", "never"],
        ["run", "b10x", "--credentials", "oauth"],
        ["run", "b10x", "--max-turns", "three"],
        ["run", "b10x", "--max-turns", "0"],
        ["run", "b10x", "--model-wire", "grpc"],
        ["run", "b10x", "--tool-surface", "borrowed"],
        ["run", "b10x", "--scope-announce", "loud"],
        ["run", "b10x", "--write-scope", "src/**"],
        ["run", "b10x", "--write-scope", "src/**=maybe"],
        ["run", "claude", "--plugin", "repo@name"],
        ["run", "claude", "--plugin", "a@b@c@d"],
        ["run", "b10x", "stray-word"],
        ["run", "b10x", "--hermetic", "loose"],
        ["run", "b10x", "--hermetic=loose"],
        ["capabilities"],
        ["capabilities", "aider"],
        ["capabilities", "b10x", "--json"],
        ["conformance", "b10x", "--fast"],
        ["doctor"],
        ["audit", "--transcript"],
        ["audit", "--verbose"],
        ["project"],
        ["project", "a.jsonl", "--from", "aider"],
        ["mcp-serve", "--catalogue"],
        ["replay", "b10x"],
        ["replay", "b10x", "r.jsonl", "--decisions", "ask"],
        ["replay", "b10x", "r.jsonl", "--hermetic"],
    ],
)
def test_every_parse_error_is_one_usage_line_with_exit_2(args: list[str]) -> None:
    assert_refused(metaharness(*args), "usage")


def test_audit_always_refuses_with_the_exact_line() -> None:
    for args in (["audit"], ["audit", "--transcript", "t.jsonl", "--spec", "s.md", "--", "--extra"]):
        result = metaharness(*args)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr == AUDIT_LINE


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["mcp-serve", "--allow-program", "ls"], "allow-program-needs-writable"),
        (["mcp-serve", "--writable", "--allow-program", "ls", "--catalogue", "c.json"], "catalogue-with-allow-program"),
    ],
)
def test_mcp_serve_option_pairing(args: list[str], code: str) -> None:
    assert_refused(metaharness(*args), code)


def test_an_unexpected_failure_is_a_refusal_line_not_a_traceback() -> None:
    with open("/dev/full", "w") as full:
        result = metaharness("capabilities", "claude", stdout=full.fileno())
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("metaharness: internal-error: OSError: ")
    assert len(result.stderr.splitlines()) == 1


def holds_stdin_twice(pid: int) -> bool:
    """``pid`` has its stdin pipe open on a second descriptor: ``project /dev/stdin`` is past start-up
    and inside the verb, where an interrupt is a refusal."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        stdin = os.readlink(fds / "0")
        return any(fd.name != "0" and os.readlink(fd) == stdin for fd in fds.iterdir())
    except FileNotFoundError:
        return False


def test_an_interrupt_is_a_signalled_refusal_not_a_traceback() -> None:
    """``project /dev/stdin`` blocks reading a pipe nobody writes; SIGINT then ends it by name."""
    script = Path(sys.executable).with_name("metaharness")
    process = subprocess.Popen(
        [str(script), "project", "/dev/stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not holds_stdin_twice(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert holds_stdin_twice(process.pid), "project never opened /dev/stdin"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 2
    assert out == ""
    assert err == "metaharness: signalled: SIGINT arrived before metaharness finished\n"
