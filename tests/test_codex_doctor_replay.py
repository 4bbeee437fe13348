"""``doctor codex`` and ``replay codex``: the report lines, the flag check, and the replay's refusals
and exit (docs/adapters/common.md#pins, docs/adapters/common.md#doctor; docs/events.md#replay)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from metaharness.pure.codex.doctor import APP_SERVER_FLAGS, SENT_FLAGS, codex_doctor_report, version_token
from metaharness.pure.environment import path_floor

HELP = "Options:\n" + "\n".join(f"  {flag}" for flag in SENT_FLAGS)
APP_SERVER_HELP = "Options:\n" + "\n".join(f"  {flag}" for flag in APP_SERVER_FLAGS)


def test_on_pin_with_every_flag_declared_exits_zero():
    report = codex_doctor_report("/home/op/.local/bin/codex", "0.171.0", HELP, APP_SERVER_HELP)
    assert report.lines == (
        "codex: /home/op/.local/bin/codex 0.171.0 — on the adapter's pin (0.171.0)",
        "codex: every flag the adapter sends is one the binary declares",
    )
    assert report.exit_code == 0


def test_off_pin_or_a_missing_flag_exits_one_naming_it():
    off = codex_doctor_report("/b/codex", "0.172.0", HELP, APP_SERVER_HELP)
    assert off.lines[0].endswith(
        "OFF the adapter's pin (0.171.0). A run is unverified rather than refused; --strict-version refuses it."
    )
    assert off.exit_code == 1
    missing = codex_doctor_report("/b/codex", "0.171.0", HELP.replace("--dangerously-bypass-hook-trust", ""), APP_SERVER_HELP)
    assert missing.lines[1:] == (
        "codex: the adapter sends --dangerously-bypass-hook-trust and the binary does not declare it",
    )
    assert missing.exit_code == 1
    assert version_token("codex-cli 0.171.0\n") == "0.171.0" and version_token("codex-cli\n") is None


def _python(code: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, check=False)


DOCTOR = "import sys; from metaharness.shell.codex.doctor import doctor_codex; sys.exit(doctor_codex())"


@pytest.mark.skipif(shutil.which("codex", path=path_floor(dict(os.environ))) is None, reason="codex is not installed")
def test_doctor_against_the_installed_binary_resolves_it_on_the_floor_path():
    done = _python(DOCTOR)
    first = done.stdout.decode().splitlines()[0]
    assert first.startswith(f"codex: {os.environ['HOME']}/.local/bin/codex ")
    assert done.returncode in (0, 1)


def test_doctor_without_the_program_is_program_not_found(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-c", DOCTOR], capture_output=True, check=False, env={**os.environ, "HOME": str(tmp_path)}
    )
    if shutil.which("codex", path="/usr/local/bin:/usr/bin:/bin"):
        pytest.skip("a codex is installed outside HOME, so the floor PATH finds it")
    assert done.returncode == 2
    assert done.stderr.decode().startswith("metaharness: program-not-found: codex is not an executable regular file")


REPLAY = """
import sys
from metaharness.shell.replay import run_replay
record, frame = sys.argv[1], (sys.argv[2] or None)
sys.exit(run_replay(kind="codex", record=record, run_id="replay", decisions="frame" if frame else sys.argv[3],
                    frame=frame, hermetic="off", harness_version=None, model=None, transcript_path=None, answers=None))
"""


def test_replay_of_a_completed_rollout_exits_zero_and_names_the_record(tmp_path: Path):
    record = Path(__file__).parent.parent / "vectors" / "codex" / "record" / "patch.jsonl"
    done = _python(REPLAY, str(record), "", "observe")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0
    assert lines[0]["transcript"] == {"path": str(record), "digest": None, "bytes": None}
    assert lines[-1]["reason"] == "completed"


def test_replay_refuses_an_unreadable_record_and_a_cut_record_exits_three(tmp_path: Path):
    missing = _python(REPLAY, str(tmp_path / "none.jsonl"), "", "observe")
    assert missing.returncode == 2 and missing.stderr.decode().startswith("metaharness: record-unreadable: ")
    assert missing.stdout == b""
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(
        (Path(__file__).parent.parent / "vectors/codex/record/shell.jsonl").read_bytes().splitlines(True)[0]
    )
    truncated = _python(REPLAY, str(cut), "", "observe")
    assert truncated.returncode == 3
    assert json.loads(truncated.stdout.splitlines()[-1])["reason"] == "error"
