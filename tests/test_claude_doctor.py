"""``doctor claude`` and ``run claude --strict-version`` against the real binary and stand-ins on the
child's PATH (docs/adapters/common.md#pins, docs/adapters/common.md#doctor)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from metaharness.pure.claude.doctor import SENT_FLAGS, accepted, declared_flags, doctor_report

FULL_HELP = "Usage: claude [options]\n  -p, --print\n" + "\n".join(f"  {flag} <x>" for flag in SENT_FLAGS if flag != "-p")


def stand_in(home: Path, banner: str, help_text: str, hides_max_turns: bool = False) -> None:
    """A ``claude`` on ``$HOME/.local/bin`` answering ``--version``, ``--help`` and the acceptance probe."""
    program = home / ".local" / "bin" / "claude"
    program.parent.mkdir(parents=True)
    unknown = "--max-turns" if hides_max_turns else "--metaharness-acceptance-probe"
    program.write_text(
        "#!/bin/sh\n"
        f'case "$1" in --version) echo "{banner}";; --help) cat <<"EOF"\n{help_text}\nEOF\n;;\n'
        f"  --max-turns) echo \"error: unknown option '{unknown}'\" >&2; exit 1;;\n"
        "  *) echo \"error: unknown option '--metaharness-acceptance-probe'\" >&2; exit 1;; esac\n"
    )
    program.chmod(0o755)


def doctor(home: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    return subprocess.run([sys.executable, "-m", "metaharness.shell", "doctor", "claude", *options], capture_output=True,
                          text=True, env=env, check=False)  # fmt: skip


def test_on_pin_with_every_flag(tmp_path: Path) -> None:
    stand_in(tmp_path, "2.1.332 (Claude Code)", FULL_HELP)
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / ".credentials.json").write_text("{}")
    done = doctor(tmp_path)
    program = tmp_path / ".local" / "bin" / "claude"
    assert done.stdout.partition("confinement: ")[0] == (
        f"claude: {program} 2.1.332 — on the adapter's pin (2.1.332)\n"
        "claude: every flag the adapter sends is one the binary declares\n"
    )
    assert done.returncode == 0


def test_off_pin_and_flag_faults_exit_1(tmp_path: Path) -> None:
    stand_in(tmp_path, "2.1.300 (Claude Code)", FULL_HELP.replace("--tools", "--toolz"), hides_max_turns=True)
    done = doctor(tmp_path)
    lines = done.stdout.partition("confinement: ")[0].splitlines()
    assert "OFF the adapter's pin (2.1.332)" in lines[0]
    assert lines[1:] == [
        "claude: the adapter sends --tools and the binary does not declare it",
        "claude: the adapter sends --max-turns and the binary does not declare it",
    ]
    assert done.returncode == 1


def test_not_found_and_unreadable_version_exit_2(tmp_path: Path) -> None:
    missing = doctor(tmp_path)
    assert missing.returncode == 2 and missing.stderr.startswith("metaharness: program-not-found: ")
    stand_in(tmp_path, "no version here", FULL_HELP)
    unreadable = doctor(tmp_path)
    assert unreadable.returncode == 2 and unreadable.stderr.startswith("metaharness: version-unreadable: ")


def test_strict_version_refuses_an_off_pin_binary_before_any_session(tmp_path: Path) -> None:
    stand_in(tmp_path, "2.1.300 (Claude Code)", FULL_HELP)
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    done = subprocess.run(
        [sys.executable, "-m", "metaharness.shell", "run", "claude", "--credentials", "none", "--decisions", "observe",
         "-p", "x", "--strict-version"],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("metaharness: version-off-pin: ") and "2.1.300" in done.stderr and "2.1.332" in done.stderr


def test_report_and_probe_rules() -> None:
    assert "-p" in declared_flags("  -p, --print  Print")
    assert accepted("--max-turns", "error: unknown option '--metaharness-acceptance-probe'")
    assert not accepted("--max-turns", "error: unknown option '--max-turns'")
    hidden = {"--max-turns": True, "--await-initialize": True}
    assert doctor_report("/x/claude", "2.1.332", FULL_HELP, hidden).exit_code == 0


def test_the_installed_binary_when_pinned() -> None:
    done = subprocess.run([sys.executable, "-m", "metaharness.shell", "doctor", "claude"], capture_output=True,
                          text=True, check=False)  # fmt: skip
    if done.returncode == 2:
        pytest.skip(f"the pinned Claude Code is not installed on the child's PATH: {done.stderr.strip()}")
    assert done.stdout.partition("confinement: ")[0].splitlines()[-1].endswith("every flag the adapter sends is one the binary declares")
