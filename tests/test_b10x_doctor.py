"""``metaharness doctor b10x`` against the project's loop and scripted binaries
(docs/adapters/b10x.md#capabilities-and-doctor, docs/adapters/common.md#doctor)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from metaharness.pure.b10x.doctor import SENT_FLAGS, doctor_report

METAHARNESS = Path(sys.executable).parent / "metaharness"
LOOP = Path(sys.executable).parent / "b10x-harness"


def doctor(home: Path) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    return subprocess.run([str(METAHARNESS), "doctor", "b10x"], env=env, capture_output=True, text=True, timeout=60, check=False)


def fake(home: Path, banner: str, flags: tuple[str, ...]) -> Path:
    bin_dir = home / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    program = bin_dir / "b10x-harness"
    help_text = "\\n".join(f"  {flag} TEXT" for flag in flags)
    program.write_text(
        f'#!/bin/sh\nif [ "$1" = "--version" ]; then printf "{banner}"; else printf "{help_text}\\n"; fi\n'
    )
    program.chmod(0o755)
    return program


def test_project_loop_is_verified_at_its_own_version(tmp_path: Path) -> None:
    (tmp_path / ".local" / "bin").mkdir(parents=True)
    (tmp_path / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    done = doctor(tmp_path)
    assert done.returncode == 0, done.stdout
    program = tmp_path / ".local" / "bin" / "b10x-harness"
    head, _, tail = done.stdout.partition("confinement: ")
    first, second, *declared_only = head.splitlines()
    assert first.startswith(f"b10x: {program} ") and "this distribution's own loop, verified at its own version" in first
    assert second == "b10x-harness: every flag the adapter sends is one the binary declares"
    assert declared_only == [
        f"b10x-harness: the binary declares {flag} but does not build it; a run that would send it is refused "
        "before the spawn"
        for flag in ("--toolchain", "--driver", "--substrate", "--substrate-embedded", "--cgroup-root")
    ]
    view = tail.splitlines()
    assert view[0].startswith("/usr/bin/bwrap (")
    assert f"  ro {tmp_path}/.local/bin" in view and f"  tmpfs {tmp_path}" in view
    assert "  rw <scratch>/work" in view and "  rw <scratch>/config" in view
    assert not any(line.startswith("  rw ") and "<scratch>" not in line for line in view)


def test_a_copy_of_the_project_loop_is_off_pin(tmp_path: Path) -> None:
    """Hostile: the entry point's bytes in another file report this distribution's version and stay off the pin."""
    (tmp_path / ".local" / "bin").mkdir(parents=True)
    copy = tmp_path / ".local" / "bin" / "b10x-harness"
    copy.write_bytes(LOOP.read_bytes())
    copy.chmod(0o755)
    done = doctor(tmp_path)
    assert done.returncode == 1
    assert "OFF the adapter's pin (0.22.0)" in done.stdout.splitlines()[0]


def test_on_pin_with_every_flag_exits_0(tmp_path: Path) -> None:
    program = fake(tmp_path, "b10x-harness 0.22.0\\n", SENT_FLAGS)
    done = doctor(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.partition("confinement: ")[0] == (
        f"b10x: {program} 0.22.0 — on the adapter's pin (0.22.0)\n"
        "b10x-harness: every flag the adapter sends is one the binary declares\n"
    )


def test_a_missing_flag_is_a_fault(tmp_path: Path) -> None:
    fake(tmp_path, "b10x-harness 0.22.0\\n", tuple(f for f in SENT_FLAGS if f not in ("--context", "--wire")))
    done = doctor(tmp_path)
    assert done.returncode == 1
    assert done.stdout.partition("confinement: ")[0].splitlines()[1:] == [
        "b10x-harness: the adapter sends --wire and the binary does not declare it",
        "b10x-harness: the adapter sends --context and the binary does not declare it",
    ]


def test_no_version_and_no_binary_are_refusals(tmp_path: Path) -> None:
    fake(tmp_path, "no version here\\n", SENT_FLAGS)
    done = doctor(tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("metaharness: version-unreadable: ")
    done = doctor(tmp_path / "elsewhere")
    assert done.returncode == 2 and done.stderr.startswith("metaharness: program-not-found: ")


def test_flag_prefixes_do_not_count() -> None:
    report = doctor_report("/b/b10x-harness", "0.22.0", " ".join(f for f in SENT_FLAGS if f != "--approve"))
    assert report.exit_code == 1
    assert report.lines[1] == "b10x-harness: the adapter sends --approve and the binary does not declare it"
