"""``metaharness run b10x`` end to end: the real ``b10x-harness`` against the real emulator (docs/adapters/b10x.md).

The child's PATH is built from the caller's HOME, so each test makes a HOME whose ``.local/bin``
links to the project's own loop.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from governed_b10x import LOOP, METAHARNESS, common, run, stream, workspace
from helpers.emulator import Emulator
from helpers.silent_endpoint import silent_endpoint

from metaharness.pure.frames import frame_document, seal_frame

READS = [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]
FRAME_BASE = {
    "workflow": {"id": "w", "version": "1"},
    "node": {"id": "n"},
    "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
    "prior": [],
    "obligations": [],
    "reaching": [],
    "next": [],
    "handoff": {"handoff": "none"},
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    return home


def frame_file(tmp_path: Path, operations: list[dict], subjects: list[dict] | None = None) -> str:
    raw = {**FRAME_BASE, "operations": operations}
    if subjects is not None:
        raw["subjects"] = subjects
    path = tmp_path / "frame.json"
    path.write_bytes(frame_document(seal_frame(raw).unwrap()))
    return str(path)


def of(events: list[dict], name: str) -> list[dict]:
    return [e for e in events if e["event"] == name]


@pytest.mark.parametrize("emulator", ["flat-write"], indirect=True)
def test_observe_the_write_happens_and_nothing_is_decided(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    done = run(home, ["--decisions", "observe", *common(emulator.base_url, work)])
    assert done.returncode == 0, done.stderr
    events = stream(done)
    assert (work / "note.md").read_text() == "written by the harness\n"
    assert not of(events, "tool.decided")
    requested = of(events, "tool.requested")[0]
    assert (requested["seam"], requested["decision_required"]) == ("none", False)
    assert not [e for e in events if e.get("code") in ("VERSION_OFF_PIN", "UNVERIFIED_TIER")]
    started = of(events, "session.started")[0]
    assert started["harness_version"] and started["cwd"] == os.path.realpath(work)
    assert of(events, "session.ended")[0]["census"] == {
        "allowed": 0, "denied": 0, "replaced": 0, "abstained": 0, "by_seam": {}, "by_decider": {}
    }
    assert events[-1]["process"] == {"kind": "exited", "code": 0}


@pytest.mark.parametrize("emulator", ["flat-write"], indirect=True)
def test_frame_allows_the_admitted_write(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    frame = frame_file(
        tmp_path,
        [*READS, {"op": "file.write"}],
        [{"subject": "file:note.md", "operations": [*READS, {"op": "file.write"}]}, {"subject": "file:**", "operations": READS}],
    )
    done = run(home, ["--frame", frame, *common(emulator.base_url, work)])
    assert done.returncode == 0, done.stderr
    events = stream(done)
    decided = of(events, "tool.decided")
    assert [(d["decision"], d["decided_by"], d["seam"]) for d in decided] == [({"decision": "allow"}, "frame", "control_request")]
    assert (work / "note.md").read_text() == "written by the harness\n"
    assert not [e for e in events if e.get("code") == "approval-disagreed"]
    assert [e["code"] for e in of(events, "warning")][:2] == ["UNVERIFIED_TIER", "COVERAGE_GAP"]


@pytest.mark.parametrize("emulator", ["flat-write"], indirect=True)
def test_frame_denies_by_operation_and_by_subject_rule(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    frame = frame_file(tmp_path, READS)
    done = run(home, ["--frame", frame, *common(emulator.base_url, work)])
    assert done.returncode == 0, done.stderr
    events = stream(done)
    decided = of(events, "tool.decided")[0]
    assert decided["decision"]["reason"].startswith('this step admits ["dir.list", "file.read", "search"] and file_write')
    assert of(events, "tool.result")[0]["is_error"] is True
    assert not (work / "note.md").exists()
    subject_frame = frame_file(
        tmp_path,
        [*READS, {"op": "file.write"}],
        [{"subject": "file:src/**", "operations": [*READS, {"op": "file.write"}]}, {"subject": "file:**", "operations": READS}],
    )
    events = stream(run(home, ["--frame", subject_frame, *common(emulator.base_url, work)]))
    assert of(events, "tool.decided")[0]["decision"]["reason"] == (
        "file:note.md falls under the subject rule file:**, which does not admit file.write; a refusal is the answer, not an obstacle"
    )
    assert not (work / "note.md").exists()


def decide(decision: dict) -> bytes:
    return (
        json.dumps(
            {"format": "metaharness.command/1", "id": "c1", "command": "tool.decide", "call_id": "call_b10x_001", "decision": decision}
        ).encode()
        + b"\n"
    )


def steered(
    home: Path, decisions: str, base_url: str, work: Path, at: str, act: Callable[[subprocess.Popen[bytes]], None]
) -> tuple[list[dict], int]:
    """A b10x run under ``decisions``, ``act`` done to metaharness at each event named ``at``; the
    events and the exit code."""
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    child = subprocess.Popen(
        [str(METAHARNESS), "run", "b10x", "--decisions", decisions, *common(base_url, work)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    lines: list[bytes] = []
    bound = threading.Timer(90, child.kill)  # a run that never ends fails the test rather than hanging it
    bound.start()
    try:
        for line in iter(child.stdout.readline, b""):
            lines.append(line)
            if f'"event":"{at}"'.encode() in line:
                act(child)
        child.wait(timeout=60)
    finally:
        bound.cancel()
    return stream(subprocess.CompletedProcess([], 0, b"".join(lines), b"")), child.returncode


def send(command: bytes) -> Callable[[subprocess.Popen[bytes]], None]:
    """The act of writing ``command`` to metaharness's stdin."""

    def write(child: subprocess.Popen[bytes]) -> None:
        assert child.stdin is not None
        child.stdin.write(command)
        child.stdin.flush()

    return write


def sigterm(child: subprocess.Popen[bytes]) -> None:
    child.send_signal(signal.SIGTERM)


def ask(home: Path, base_url: str, work: Path, command: bytes) -> list[dict]:
    events, code = steered(home, "ask", base_url, work, "tool.requested", send(command))
    assert code == 0
    return events


@pytest.mark.parametrize("emulator", ["flat-write"], indirect=True)
def test_ask_embedder_denies_then_allows(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    events = ask(home, emulator.base_url, work, decide({"decision": "deny", "reason": "notes are written in the next step"}))
    requested = of(events, "tool.requested")[0]
    assert (requested["decision_required"], requested["deadline_ms"]) == (True, 25000)
    decided = of(events, "tool.decided")[0]
    assert (decided["decided_by"], decided["decision"]["reason"]) == ("embedder", "notes are written in the next step")
    names = [e["event"] for e in events]
    assert names.index("tool.decided") + 1 == names.index("command.result")
    assert not (work / "note.md").exists()
    events = ask(home, emulator.base_url, work, decide({"decision": "allow"}))
    assert of(events, "tool.decided")[0]["decision"] == {"decision": "allow"}
    assert (work / "note.md").read_text() == "written by the harness\n"


@pytest.mark.parametrize("emulator", ["flat-write"], indirect=True)
def test_commands_refused_with_their_codes(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    commands = b"".join(
        json.dumps({"format": "metaharness.command/1", "id": i, "command": c, **p}).encode() + b"\n"
        for i, c, p in [
            ("s1", "steer", {"text": "faster"}),
            ("d1", "tool.decide", {"call_id": "nope", "decision": {"decision": "allow"}}),
            ("d2", "tool.decide", {"call_id": "call_b10x_001", "decision": {"decision": "deny", "reason": "  "}}),
        ]
    ) + b"not a command\n"
    events = ask(home, emulator.base_url, work, commands + decide({"decision": "allow"}) + decide({"decision": "allow"}))
    results = {e["id"]: e["outcome"] for e in of(events, "command.result")}
    assert results["s1"]["refused"] == {"code": "UNSUPPORTED_CONTROL", "reason": "the b10x adapter cannot honour steer"}
    assert results["d1"]["refused"]["code"] == "UNKNOWN_CALL"
    assert results["d2"]["refused"]["code"] == "MALFORMED"
    assert results["c1"] == {"result": "refused", "refused": {"code": "TOO_LATE", "reason": "call_b10x_001 was decided or its window closed; a decision cannot be replayed"}}
    assert len(of(events, "tool.decided")) == 1


@pytest.mark.parametrize("emulator", ["flat-write"], indirect=True)
def test_ask_deadline_expires_after_25_seconds(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    started = time.monotonic()
    events = ask(home, emulator.base_url, work, b"")
    assert time.monotonic() - started >= 25
    decided = of(events, "tool.decided")[0]
    assert decided["decided_by"] == "deadline" and decided["latency_ms"] >= 25000
    assert decided["decision"]["reason"].startswith("metaharness's own 25000ms decision deadline expired")
    assert not (work / "note.md").exists()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["-p", "x", "--model", "m", "--model-endpoint", "http://127.0.0.1:9/v1"], "frame-required"),
        (["--decisions", "observe", "--model", "m"], "model-endpoint-required"),
        (["--decisions", "observe", "--model", "m", "--model-endpoint", "http://x", "--credentials", "api-key"], "api-key-missing"),
        (["--decisions", "observe", "--model", "m", "--model-endpoint", "http://x", "--cwd", "/nonexistent"], "cwd-unusable"),
        (["--decisions", "observe", "--model", "m", "--model-endpoint", "http://x", "--hooks", "/nonexistent"], "input-unreadable"),
    ],
)
def test_refusals_before_the_spawn(home: Path, args: list[str], code: str) -> None:
    done = run(home, args, timeout=30)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith(f"metaharness: {code}: ")


def test_program_not_found_names_the_path(tmp_path: Path) -> None:
    done = run(tmp_path, ["--decisions", "observe", "--model", "m", "--model-endpoint", "http://x"], timeout=30)
    assert done.returncode == 2
    assert done.stderr.decode().startswith(f"metaharness: program-not-found: b10x-harness is not an executable regular file on the PATH {tmp_path}/.local/bin:")


def test_frame_inadmissible_refused(home: Path, tmp_path: Path) -> None:
    frame = frame_file(tmp_path, [{"op": "file.read"}, {"op": "search"}])
    done = run(home, ["--frame", frame, "--model", "m", "--model-endpoint", "http://x"], timeout=30)
    assert done.returncode == 2 and "frame-inadmissible" in done.stderr.decode()


@pytest.mark.parametrize("emulator", ["unauthorized"], indirect=True)
def test_loop_dying_without_finished_exits_3(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    done = run(home, ["--decisions", "observe", *common(emulator.base_url, workspace(tmp_path))])
    assert done.returncode == 3
    events = stream(done)
    warning = next(e for e in events if e.get("code") == "NO_TERMINAL_RECORD")
    assert warning["message"].startswith("the harness stopped without a terminal record; its stderr ended: ")
    assert events[-1]["reason"] == "error" and events[-1]["process"] == {"kind": "exited", "code": 1}


def test_sigterm_to_metaharness_ends_the_run_killed(home: Path, tmp_path: Path) -> None:
    """SIGTERM at ``turn.started`` against an endpoint that never answers: the turn is in flight, never over."""
    with silent_endpoint() as base_url:
        events, code = steered(home, "observe", base_url, workspace(tmp_path), "turn.started", sigterm)
    assert code == 3
    assert events[-1]["reason"] == "killed"


def test_interrupt_command_cancels_the_loop(home: Path, tmp_path: Path) -> None:
    """``interrupt`` at ``turn.started`` against an endpoint that never answers, so it lands mid-turn
    however late it arrives (a streamed answer can end first on a loaded machine)."""
    command = b'{"format":"metaharness.command/1","id":"i1","command":"interrupt","reason":"enough"}\n'
    with silent_endpoint() as base_url:
        events, code = steered(home, "observe", base_url, workspace(tmp_path), "turn.started", send(command))
    assert of(events, "command.result")[0]["outcome"] == {"result": "ok", "applies_at": None}
    assert of(events, "session.ended")[0]["subtype"] == "cancelled"
    assert events[-1]["reason"] == "error" and code == 3


@pytest.mark.parametrize("emulator", ["flat-tool"], indirect=True)
def test_audited_run_of_the_project_loop_reads_h9_ok(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    """docs/adapters/b10x.md#program-and-version: the loop this distribution ships is verified at this distribution's
    own version, so H9 reads ok, no VERSION_OFF_PIN is written and an audited run exits 0."""
    done = run(home, ["--decisions", "observe", "--audit", "-p", "read", "--model", "b10x-emulated",
                      "--model-endpoint", emulator.base_url])  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = stream(done)
    assert not [e for e in events if e.get("code") == "VERSION_OFF_PIN"]
    hermetic = of(events, "session.started")[0]["hermetic"]
    assert [row["row"] for row in hermetic["imposed"]] == [
        "H1a", "H2", "H3", "H4", "H5", "H6", "H7", "H8", "H10", "H11", "H12", "H13", "H14"
    ]  # fmt: skip
    assert hermetic["unavailable"] == [{"row": "H9", "why": "the version is read from the launch's --version probe"}]
    report = done.stderr.decode().splitlines()
    assert report[0].startswith("hermetic verdict")
    assert any(line.startswith("  H9   ok  gating") for line in report), report
    assert any(line.startswith("  H12  ok  gating   effect") for line in report), report
    assert any(line.startswith("  H13  ok  gating   effect") for line in report), report
    assert report[-3:] == ["child exit: 0", "control verdict: ok", "audit verdict: ok (exit 0)"]


def impostor_home(tmp_path: Path) -> Path:
    """A HOME whose ``b10x-harness`` is a copy of this distribution's entry point, not the entry point itself."""
    home = tmp_path / "impostor"
    (home / ".local" / "bin").mkdir(parents=True)
    copy = home / ".local" / "bin" / "b10x-harness"
    copy.write_bytes(LOOP.read_bytes())
    copy.chmod(0o755)
    return home


@pytest.mark.parametrize("emulator", ["flat-tool"], indirect=True)
def test_a_copy_of_the_own_loop_reporting_its_version_stays_unverified(emulator: Emulator, tmp_path: Path) -> None:
    """Hostile: a program that reports this distribution's version but is not its entry point is off the pin: H9 gap,
    ``VERSION_OFF_PIN``, exit 1 audited, and ``version-off-pin`` under ``--strict-version``."""
    home = impostor_home(tmp_path)
    args = ["--decisions", "observe", "-p", "read", "--model", "b10x-emulated", "--model-endpoint", emulator.base_url]
    done = run(home, [*args, "--audit"])
    assert done.returncode == 1, done.stderr
    assert stream(done)[0]["code"] == "VERSION_OFF_PIN"
    assert any(line.startswith("  H9   gap gating") for line in done.stderr.decode().splitlines())
    refused = run(home, [*args, "--strict-version"], timeout=30)
    assert refused.returncode == 2 and refused.stdout == b""
    assert refused.stderr.decode().startswith("metaharness: version-off-pin: ")


@pytest.mark.parametrize("emulator", ["flat-tool"], indirect=True)
def test_strict_version_passes_the_own_loop(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    done = run(home, ["--decisions", "observe", "--strict-version", "-p", "read", "--model", "b10x-emulated",
                      "--model-endpoint", emulator.base_url])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert stream(done)[-1]["reason"] == "completed"


@pytest.mark.parametrize("emulator", ["slow"], indirect=True)
def test_halt_kills_the_loop_and_closes_steer_halt(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    command = b'{"format":"metaharness.command/1","id":"h1","command":"halt","reason":"enough"}\n'
    events, code = steered(home, "observe", emulator.base_url, workspace(tmp_path), "turn.started", send(command))
    assert of(events, "command.result")[0]["id"] == "h1"
    assert not [e for e in events if e.get("code") == "NO_TERMINAL_RECORD"]
    assert events[-1]["reason"] == "steer-halt" and events[-1]["process"] == {"kind": "signaled", "signal": 9}
    assert code == 3


@pytest.mark.parametrize("emulator", ["flat-tool"], indirect=True)
def test_retain_dir_keeps_the_record(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    """--retain-dir copies the raw record to DIR/<run id>/ (docs/cli.md#run)."""
    retain = tmp_path / "kept"
    retain.mkdir()
    done = run(home, ["--decisions", "observe", "--retain-dir", str(retain), "-p", "read", "--model", "b10x-emulated",
                      "--model-endpoint", emulator.base_url])  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = stream(done)[0]["run"]
    kept = (retain / run_id / "loop.jsonl").read_bytes().splitlines()
    assert kept[0].startswith(b'{"kind":"started"') and kept[-1].startswith(b'{"kind":"finished"')


@pytest.mark.parametrize("emulator", ["flat-write"], indirect=True)
def test_sigterm_while_a_call_waits_abandons_it_first(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    work = workspace(tmp_path)
    events, code = steered(home, "ask", emulator.base_url, work, "tool.requested", sigterm)
    decided = of(events, "tool.decided")[0]
    assert (decided["decided_by"], decided["decision"]["reason"]) == (
        "adapter", "the run was interrupted before this call was decided, so nothing ran"
    )
    assert any(e.get("code") == "PENDING_CALL_ABANDONED" for e in events)
    assert events[-1]["reason"] == "killed" and code == 3
    assert not (work / "note.md").exists()


def test_a_child_that_stops_before_its_first_record_is_named_by_no_terminal_record(tmp_path: Path, emulator: Emulator) -> None:
    """docs/events.md#warning-codes: with no ``session.started`` the closing warning names the program started;
    docs/cli.md#progress-on-stderr: the failed run says so on stderr although it is not a terminal."""
    program = exiting_harness(tmp_path)
    done = run(tmp_path / "home", ["--decisions", "observe", "-p", "x", "--model", "m", "--model-endpoint", emulator.base_url])
    events = stream(done)
    assert done.returncode == 3 and of(events, "session.started") == []
    warning = next(e for e in events if e.get("code") == "NO_TERMINAL_RECORD")
    assert warning["message"] == (
        f"the harness stopped without a terminal record or session.started (metaharness started {program}); "
        "its stderr ended: no endpoint\n"
    )
    assert done.stderr.decode() == (
        f"metaharness: run {events[0]['run']} failed (exit 3): the stream closed error: "
        f"{warning['message'].strip()}\n"
    )


def exiting_harness(tmp_path: Path) -> Path:
    """A HOME whose ``b10x-harness`` exits 41 before writing any record."""
    program = tmp_path / "home" / ".local" / "bin" / "b10x-harness"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\necho 'no endpoint' >&2\nexit 41\n")
    program.chmod(0o755)
    return program


def test_quiet_holds_back_the_failure_line(tmp_path: Path, emulator: Emulator) -> None:
    exiting_harness(tmp_path)
    args = ["--decisions", "observe", "--quiet", "-p", "x", "--model", "m", "--model-endpoint", emulator.base_url]
    done = run(tmp_path / "home", args)
    assert done.returncode == 3 and done.stderr == b"" and stream(done)[-1]["reason"] == "error"


def test_quiet_keeps_the_hermetic_on_verdict(home: Path, emulator: Emulator, tmp_path: Path) -> None:
    """docs/cli.md#run: ``--quiet`` holds back progress only; ``--hermetic on``'s verdict is its required output."""
    done = run(home, ["--decisions", "observe", "--hermetic", "on", "--quiet", *common(emulator.base_url, workspace(tmp_path))])
    assert done.returncode == 0 and stream(done)[-1]["reason"] == "completed"
    lines = done.stderr.decode().splitlines()
    assert lines[0] == "hermetic verdict (the attestation half is metaharness's own claim, not independent evidence)"
    assert [line.split()[0] for line in lines[1:13]][:2] == ["H1a", "H1b"]
