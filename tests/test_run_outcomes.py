"""Truthful outcomes on every kind, end to end with the real codex, Claude Code and the project's own loop against the
real emulator and a dead endpoint (docs/events.md#stream-ending, docs/hermetic.md#by-effect,
docs/adapters/b10x.md#program-and-version, docs/adapters/codex.md#configtoml).

A failed run never exits 0; ``--hermetic strict`` exits 0 on a clean confined run of each kind; the launch record
names the program that ran."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from governed_b10x import LOOP, METAHARNESS, stream
from vendor_cli import pinned_cli

PROGRAMS = {"codex": "codex", "claude": "claude", "b10x": "b10x-harness"}
DEAD = "http://127.0.0.1:1"
"""Nothing listens on port 1 of the loopback interface (binding it needs privilege)."""


@pytest.fixture
def mute() -> Iterator[str]:
    """An endpoint that accepts every connection and closes it unanswered: the pre-flight connect passes
    (docs/cli.md#run), and every model request fails."""
    listener = socket.create_server(("127.0.0.1", 0))
    stopped = threading.Event()

    def serve() -> None:
        while not stopped.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            connection.close()

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stopped.set()
    listener.close()


def needs(kind: str) -> None:
    if kind != "b10x" and pinned_cli(kind) is None:
        pytest.skip(f"the pinned {kind} CLI is not installed on the child's PATH (vendors/install.sh)")


@pytest.fixture
def home(own_home: Path) -> Path:
    """The test's HOME, linking the pinned vendor CLIs and this distribution's own loop."""
    (own_home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    return own_home


def run(home: Path, kind: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    command = [str(METAHARNESS), "run", kind, *args]
    return subprocess.run(command, env=env, capture_output=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)


def codes(events: list[dict]) -> list[str]:
    return [event["code"] for event in events if event["event"] == "warning"]


@pytest.mark.parametrize("confine", ["on", "off"])
def test_codex_without_an_endpoint_fails_at_its_first_request(home: Path, confine: str) -> None:
    """Seed: under ``--credentials none`` the run fails at its first request — codex exits 1 at once (it used to retry
    for ever) and the run closes ``error``, exit 3, though codex's record ends with a ``task_complete``."""
    needs("codex")
    done = run(home, "codex", "-p", "x", "--credentials", "none", "--confine", confine, timeout=60)
    events = stream(done)
    assert done.returncode == 3, done.stderr
    assert events[-1]["reason"] == "error" and events[-1]["process"] == {"kind": "exited", "code": 1}
    assert events[-2]["code"] == "RUN_FAILED"
    assert events[-2]["message"].startswith("the harness exited 1 after a terminal record that reported success")
    assert events[0]["program"] == str(home / ".local" / "bin" / "codex")
    failed = f"metaharness: run {events[0]['run']} failed (exit 3): the stream closed error: {events[-2]['message']}"
    assert done.stderr.decode().splitlines()[-1] == failed


def test_codex_against_a_dead_endpoint_is_not_a_success(home: Path, mute: str) -> None:
    """The issue's case: ``--credentials none --model-endpoint`` at an endpoint that answers nothing exited 0.
    (Where nothing listens at all, the pre-flight connect refuses the run first: ``endpoint-unreachable``.)"""
    needs("codex")
    done = run(home, "codex", "-p", "x", "--credentials", "none", "--model-endpoint", mute, timeout=110)
    events = stream(done)
    assert done.returncode == 3, done.stderr
    assert events[-1]["reason"] == "error" and "RUN_FAILED" in codes(events)


def test_gemini_without_an_endpoint_fails_at_its_first_request(home: Path) -> None:
    """Seed: under ``--credentials none`` the run fails at its first request on gemini too — unconfined (confined, the
    run is refused ``confine-route-unavailable``), Gemini CLI exits 41 at once for want of a key, and the run closes
    ``error``, exit 3. (It exits before its opening record, so this stream holds no ``session.started``: the
    ``NO_TERMINAL_RECORD`` names the program instead.)"""
    needs("gemini")
    done = run(home, "gemini", "-p", "x", "--credentials", "none", "--confine", "off", timeout=60)
    events = stream(done)
    assert done.returncode == 3, done.stderr
    assert events[-1]["reason"] == "error" and events[-1]["process"] == {"kind": "exited", "code": 41}
    assert "NO_TERMINAL_RECORD" in codes(events) and "GEMINI_API_KEY" in events[-2]["message"]
    program = home / ".local" / "bin" / "gemini"
    assert events[-2]["message"].startswith(
        f"the harness stopped without a terminal record or session.started (metaharness started {program}); "
    )
    assert done.stderr.decode().splitlines()[-1].startswith(
        f"metaharness: run {events[0]['run']} failed (exit 3): the stream closed error: the harness stopped"
    )


@pytest.mark.parametrize("kind", ["codex", "claude", "gemini", "b10x"])
def test_a_dead_endpoint_is_refused_before_the_spawn(home: Path, tmp_path: Path, kind: str) -> None:
    """The run engine's last check before every kind's spawn: exit 2, nothing on stdout, the scratch root removed."""
    needs(kind)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    decisions = ("--decisions", "observe") if kind == "b10x" else ()
    command = [str(METAHARNESS), "run", kind, "-p", "x", *decisions, "--credentials", "none", "--model-endpoint", DEAD]
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TMPDIR": str(temporary)}
    done = subprocess.run(command, env=env, capture_output=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    assert done.stderr.decode().startswith("metaharness: endpoint-unreachable: ")
    assert list(temporary.iterdir()) == []


@pytest.mark.parametrize(
    ("kind", "args"),
    [
        ("claude", ("-p", "x", "--credentials", "none")),
        ("b10x", ("--decisions", "observe", "-p", "x", "--model-endpoint", "{mute}/v1")),
    ],
)
def test_a_run_no_model_answered_exits_3(home: Path, mute: str, kind: str, args: tuple[str, ...]) -> None:
    needs(kind)
    done = run(home, kind, *(arg.format(mute=mute) for arg in args), timeout=110)
    events = stream(done)
    assert done.returncode == 3, done.stderr
    assert events[-1]["reason"] == "error" and events[-1]["process"]["code"] != 0
    started = next(event for event in events if event["event"] == "session.started")
    assert started["program"] == str(home / ".local" / "bin" / PROGRAMS[kind])


def strict_args(kind: str, root: str) -> tuple[str, ...]:
    if kind == "b10x":
        return ("--decisions", "observe", "-p", "say hi", "--model-endpoint", root + "/v1")
    return ("-p", "say hi", "--credentials", "none", "--model-endpoint", root)


@pytest.mark.parametrize("emulator", ["text"], indirect=True)
@pytest.mark.parametrize("kind", ["claude", "b10x"])
def test_strict_passes_a_clean_confined_run(home: Path, emulator: str, kind: str) -> None:
    """``--hermetic strict`` exits 0 on a clean confined run of claude and the loop: the project's own loop verified
    at its own version; ``session.started.program`` names the resolved program."""
    needs(kind)
    done = run(home, kind, *strict_args(kind, emulator), "--hermetic", "strict")
    events = stream(done)
    report = done.stderr.decode()
    assert done.returncode == 0, report
    assert report.splitlines()[-3:] == ["child exit: 0", "control verdict: ok", "audit verdict: ok (exit 0)"]
    assert " unk " not in report and " gap " not in report
    started = next(event for event in events if event["event"] == "session.started")
    assert started["program"] == str(home / ".local" / "bin" / PROGRAMS[kind])
    assert events[-1]["reason"] == "completed" and "RUN_FAILED" not in codes(events)


@pytest.mark.parametrize("emulator", ["text"], indirect=True)
@pytest.mark.parametrize(("wire", "model", "path"), [
    ("anthropic-messages", "claude-opus-5-5", "/v1/messages"), (None, "gpt-6.2-sol", "/v1/responses"),
])  # fmt: skip
def test_the_seed_example_runs_without_a_model(
    home: Path, emulator: str, tmp_path: Path, wire: str | None, model: str, path: str
) -> None:
    """Seed: ``run b10x --decisions observe -p … --model-endpoint … --model-wire anthropic-messages`` runs as written,
    the loop asking for the wire's documented default model."""
    wired = ("--model-wire", wire) if wire is not None else ()
    done = run(home, "b10x", "--decisions", "observe", "-p", "say hi", "--model-endpoint", emulator + "/v1", *wired)
    assert done.returncode == 0, done.stderr
    started = next(event for event in stream(done) if event["event"] == "session.started")
    assert started["model"] == model
    requests = [json.loads(line) for line in (tmp_path / "emulator.jsonl").read_text().splitlines()]
    assert [(r["path"], r["model"]) for r in requests] == [(path, model)]


@pytest.mark.parametrize("emulator", ["text"], indirect=True)
def test_strict_passes_on_a_clean_confined_codex_run(home: Path, emulator: str) -> None:
    """Codex's silent rows (H1a, H1b, H4, H5) read ok by effect, and H14 too: codex 0.171.0 starts every shell
    command through the first ``bwrap`` on its PATH, the tools' layer's entry (docs/confinement.md#two-layers), and
    the harness's environment read from outside names it; so a clean confined codex run passes strict with exit 0."""
    needs("codex")
    done = run(home, "codex", *strict_args("codex", emulator), "--hermetic", "strict")
    report = done.stderr.decode()
    assert done.returncode == 0, report
    rows = [line.split() for line in report.splitlines() if line.strip().startswith("H")]
    assert [row[0] for row in rows if row[1:2] != ["ok"]] == [], report
    assert any(row[:2] == ["H14", "ok"] for row in rows), report


@pytest.mark.parametrize("kind", ["claude", "codex", "gemini"])
def test_strict_version_refuses_an_off_pin_program_before_the_spawn(tmp_path: Path, kind: str) -> None:
    """``--strict-version`` probes the program the launch resolved (here a stand-in on the PATH floor printing an
    off-pin version) and refuses ``version-off-pin`` with exit 2, nothing on stdout and the scratch root removed."""
    home, temporary = tmp_path / "home", tmp_path / "tmp"
    (home / ".local" / "bin").mkdir(parents=True)
    temporary.mkdir()
    program = home / ".local" / "bin" / kind
    program.write_text("#!/bin/sh\necho 0.0.1\n")
    program.chmod(0o755)
    command = [str(METAHARNESS), "run", kind, "-p", "x", "--credentials", "none", "--model-endpoint", DEAD,
               "--confine", "off", "--strict-version"]  # fmt: skip
    env = {"HOME": str(home), "PATH": os.environ["PATH"], "TMPDIR": str(temporary)}
    done = subprocess.run(command, env=env, capture_output=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    assert done.stderr.decode().startswith("metaharness: version-off-pin: "), done.stderr
    assert str(program) in done.stderr.decode() and "0.0.1" in done.stderr.decode()
    assert list(temporary.iterdir()) == []
