"""The real Gemini CLI (pinned 0.61.0) governed through its BeforeTool hook on the hook channel, against
``b10x-emulator``'s Generative Language wire (docs/adapters/gemini.md; ``--credentials none --model-endpoint``).

Each test starts the emulator with a gemini scenario, runs ``run_gemini`` in a real subprocess with real
stdin and stdout, and reads the stream it writes: every stream must be well formed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from codex_process import census, decided, of, sealed_frame, well_formed
from gemini_process import GEMINI, PINNED, endpoint, finish, start_run

from metaharness.pure.events import Transcript
from metaharness.pure.gemini.record import RecordFacts
from metaharness.pure.gemini.session import open_session
from metaharness.pure.hook_channel import HOOK_GAVE_UP, NO_ANSWER_REASON
from metaharness.pure.options import RunOptions
from metaharness.shell.gemini.live import drive_gemini
from metaharness.shell.gemini.run import materialise, plan
from metaharness.shell.live_engine import StreamLines

pytestmark = [
    pytest.mark.skipif(GEMINI is None, reason=f"the pinned Gemini CLI {PINNED} is not on the child's PATH"),
    pytest.mark.usefixtures("own_home"),
]

NOTE = "written by the emulator\n"
METAHARNESS = str(Path(sys.executable).with_name("metaharness"))


def hook_call(events: list[dict], tool: str) -> dict:
    (call,) = [e for e in of(events, "tool.requested") if e["seam"] == "hook" and e["name"] == tool]
    return call


def results(events: list[dict]) -> list[dict]:
    return of(events, "tool.result")


def work_tree(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("hello harness\n")
    return work


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_observe_runs_the_write_and_the_hook_call_takes_the_record_id(emulator: str, tmp_path: Path) -> None:
    work = work_tree(tmp_path)
    events, code, _ = finish(start_run(endpoint(emulator, decisions="observe", cwd=str(work))))
    assert code == 0 and events[-1]["reason"] == "completed"
    call = hook_call(events, "write_file")
    assert call["call_id"] == "write_file__call_b10x_001"
    assert call["operations"] == ["file.write"] and call["subjects"] == ["file:note.md"]
    assert decided(events, call["call_id"])["decided_by"] == "observe"
    (result,) = results(events)
    assert result["call_id"] == call["call_id"] and result["is_error"] is False
    assert (work / "note.md").read_text() == NOTE
    started = of(events, "session.started")[0]
    assert started["adapter"] == "gemini" and started["harness_version"] == PINNED and started["cwd"] is None
    assert of(events, "session.ended")[0]["final_answer"]["text"] == "emulated work is done"
    assert not [e for e in of(events, "warning") if e["code"] == "COVERAGE_GAP"]


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_frame_deny_blocks_the_write_on_the_hook(emulator: str, tmp_path: Path) -> None:
    work = work_tree(tmp_path)
    frame = sealed_frame(tmp_path, ["file.read", "dir.list", "search"])
    events, code, _ = finish(start_run(endpoint(emulator, decisions="frame", frame=frame, cwd=str(work))))
    call = hook_call(events, "write_file")
    decision = decided(events, call["call_id"])
    assert decision["decided_by"] == "frame" and decision["decision"]["decision"] == "deny"
    (result,) = results(events)
    assert result["is_error"] is True and "Tool execution blocked: this step admits" in result["content"]
    assert not (work / "note.md").exists()
    assert census(events)["denied"] == 1 and census(events)["by_seam"] == {"hook": 1}
    assert code == 0 and events[-1]["reason"] == "completed"


@pytest.mark.parametrize("emulator", ["gemini-shell"], indirect=True)
def test_frame_allow_runs_the_shell_call(emulator: str, tmp_path: Path) -> None:
    work = work_tree(tmp_path)
    frame = sealed_frame(tmp_path, ["shell"])
    events, code, _ = finish(start_run(endpoint(emulator, decisions="frame", frame=frame, cwd=str(work))))
    call = hook_call(events, "run_shell_command")
    assert call["operations"] == ["shell"] and call["subjects"] == ["proc:echo"]
    assert decided(events, call["call_id"])["decision"] == {"decision": "allow"}
    (result,) = results(events)
    assert result["is_error"] is False and "emulated" in json.dumps(result["content"])
    assert census(events)["allowed"] == 1 and code == 0


@pytest.mark.parametrize("emulator", ["gemini-parallel"], indirect=True)
def test_parallel_calls_are_each_decided_under_their_own_record_id(emulator: str, tmp_path: Path) -> None:
    work = work_tree(tmp_path)
    frame = sealed_frame(tmp_path, ["shell"])
    events, code, _ = finish(start_run(endpoint(emulator, decisions="frame", frame=frame, cwd=str(work))))
    write, shell = hook_call(events, "write_file"), hook_call(events, "run_shell_command")
    assert {write["call_id"], shell["call_id"]} == {"write_file__call_b10x_001", "run_shell_command__call_b10x_002"}
    assert decided(events, write["call_id"])["decision"]["decision"] == "deny"
    assert decided(events, shell["call_id"])["decision"] == {"decision": "allow"}
    by_call = {result["call_id"]: result["is_error"] for result in results(events)}
    assert by_call == {write["call_id"]: True, shell["call_id"]: False}
    assert not (work / "note.md").exists() and code == 0


def ask_run(emulator: str, work: Path, decision: dict) -> tuple[list[dict], dict]:
    process = start_run(endpoint(emulator, decisions="ask", cwd=str(work)))
    assert process.stdout is not None and process.stdin is not None
    lines: list[bytes] = []
    for line in process.stdout:
        lines.append(line)
        event = json.loads(line)
        if event["event"] == "tool.requested" and event["decision_required"]:
            break
    assert event["seam"] == "hook" and event["deadline_ms"] is not None
    command = {"format": "metaharness.command/1", "id": "c1", "command": "tool.decide", "call_id": event["call_id"],
               "decision": decision}
    process.stdin.write(json.dumps(command).encode() + b"\n")
    process.stdin.flush()
    events, _, _ = finish(process, lines)
    return events, event


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_ask_deny_from_the_embedder_leaves_no_note(emulator: str, tmp_path: Path) -> None:
    work = work_tree(tmp_path)
    events, asked = ask_run(emulator, work, {"decision": "deny", "reason": "notes are written in the next step"})
    decision = decided(events, asked["call_id"])
    assert decision["decided_by"] == "embedder"
    assert not (work / "note.md").exists()
    assert "notes are written in the next step" in json.dumps(results(events))


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_ask_allow_from_the_embedder_writes_the_note(emulator: str, tmp_path: Path) -> None:
    work = work_tree(tmp_path)
    events, asked = ask_run(emulator, work, {"decision": "allow"})
    assert decided(events, asked["call_id"])["decision"] == {"decision": "allow"}
    assert (work / "note.md").read_text() == NOTE
    assert census(events)["by_decider"] == {"embedder": 1}


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_a_hook_that_times_out_is_a_denied_call_never_a_silent_allow(emulator: str, tmp_path: Path) -> None:
    """An ask nobody answers, with the hook's timeout cut to 4 s: the hook's own backstop (1 s) gives up
    first and blocks the call with exit 2, before metaharness's 2 s deadline and Gemini's 4 s timeout."""
    work = work_tree(tmp_path)
    process = start_run(endpoint(emulator, decisions="ask", cwd=str(work)), hook_timeout_s=4)
    events, code, _ = finish(process)
    call = hook_call(events, "write_file")
    decision = decided(events, call["call_id"])
    assert decision["decided_by"] == "deadline" and decision["decision"]["decision"] == "deny"
    assert decision["decision"]["reason"] == HOOK_GAVE_UP
    (result,) = results(events)
    assert result["is_error"] is True and NO_ANSWER_REASON in result["content"]
    assert not (work / "note.md").exists()
    assert code == 0


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_the_retained_record_replays_views_and_projects(emulator: str, tmp_path: Path) -> None:
    """``--retain-dir`` keeps ``stream.jsonl``, the hook requests and the generated files (no credential);
    ``replay gemini`` maps the record offline with every call on the record path, and the view and the page
    read it with ``--from gemini``."""
    work = work_tree(tmp_path)
    retained = tmp_path / "retained"
    retained.mkdir()
    events, code, _ = finish(start_run(endpoint(emulator, decisions="observe", cwd=str(work),
                                                retain_dir=str(retained))))  # fmt: skip
    assert code == 0
    (run_dir,) = retained.iterdir()
    assert sorted(p.name for p in run_dir.iterdir()) == ["hook-requests", "pretooluse", "settings.json", "stream.jsonl",
                                                         "workspace.diff"]
    assert "metaharness-model-endpoint" not in (run_dir / "settings.json").read_text()
    record = run_dir / "stream.jsonl"
    replayed = subprocess.run([METAHARNESS, "replay", "gemini", str(record)], capture_output=True, check=False)
    assert replayed.returncode == 0, replayed.stderr.decode()
    offline = well_formed(replayed.stdout.splitlines(keepends=True))
    (call,) = of(offline, "tool.requested")
    assert call["seam"] == "none" and call["call_id"] == hook_call(events, "write_file")["call_id"]
    assert offline[-1]["reason"] == "completed" and census(offline)["allowed"] == 0
    view = subprocess.run([f"{METAHARNESS}-view", "--from", "gemini", str(record)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert view.returncode == 0 and "call write_file" in view.stdout
    page = tmp_path / "page.html"
    projected = subprocess.run([METAHARNESS, "project", "--from", "gemini", str(record), "--html", str(page)],
                               capture_output=True, check=False)  # fmt: skip
    assert projected.returncode == 0 and "write_file" in page.read_text()


def test_doctor_names_the_pin_and_every_flag_the_launch_sends(own_home: Path) -> None:
    done = subprocess.run([METAHARNESS, "doctor", "gemini", "--credentials", "none"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    program = own_home / ".local" / "bin" / "gemini"
    assert lines[0] == f"gemini: {program} {PINNED} — on the adapter's pin ({PINNED})"
    assert lines[1] == "gemini: every flag the adapter sends is one the binary declares"


def test_doctor_names_the_mode_gemini_does_not_carry_as_the_run_does(own_home: Path) -> None:
    """The default ``--credentials operator-login`` is refused by name, with the run's reason, not as a missing
    ``~/.gemini/.env`` (the loopback custody file, which no operator-login run would read)."""
    done = subprocess.run([METAHARNESS, "doctor", "gemini"], capture_output=True, text=True, check=False)
    (line,) = [text for text in done.stdout.splitlines() if text.startswith("credential: ")]
    assert line.startswith("credential: credentials-not-carried: --credentials operator-login is not carried on gemini")
    assert "OAuth login" in line and ".env" not in line and done.returncode == 1


def test_a_google_sign_in_is_refused_by_name() -> None:
    done = subprocess.run([METAHARNESS, "run", "gemini", "-p", "hi", "--credentials", "operator-login"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("metaharness: credentials-not-carried: --credentials operator-login is not carried")
    assert "OAuth login" in done.stderr


@pytest.mark.parametrize("emulator", ["gemini-write"], indirect=True)
def test_a_hook_that_cannot_reach_metaharness_blocks_the_call_and_it_is_named_a_gap(emulator: str, tmp_path: Path) -> None:
    """The live loop in-process with the hook channel's ``requests/`` gone before the spawn: the real hook cannot
    hand the call over, prints the deny body and exits 2, so Gemini CLI blocks the write (it would run it on any
    other failure), and the run records the call it never saw on a seam as ``COVERAGE_GAP``."""
    work = work_tree(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700)
    options = RunOptions(kind="gemini", prompt="do the task", decisions="observe", credentials="none",
                         model_endpoint=emulator, cwd=str(work), confine="off")  # fmt: skip
    launch = plan(options, str(scratch), (), None)
    channel = materialise(launch)
    (scratch / "hook-channel" / "requests").rmdir()
    facts = RecordFacts(transcript=Transcript(path=launch.transcript, digest=None, bytes=None),
                        hermetic=launch.hermetic, cwd=launch.cwd)  # fmt: skip
    lines = StreamLines("gap")
    try:
        with open(launch.transcript, "wb") as transcript:
            outcome = drive_gemini(launch=launch, session=open_session(facts, "gap", "observe", None), channel=channel,
                                   write_event=lines.write, transcript=transcript, commands=None,
                                   on_steering_refusal=lambda line: None)  # fmt: skip
    finally:
        channel.close()
    events = well_formed(bytes(lines.lines).splitlines(keepends=True))
    (call,) = of(events, "tool.requested")
    assert call["seam"] == "none" and call["name"] == "write_file"
    (result,) = results(events)
    assert result["is_error"] is True and NO_ANSWER_REASON in result["content"]
    (gap,) = [e for e in of(events, "warning") if e["code"] == "COVERAGE_GAP"]
    assert call["call_id"] in gap["message"]
    assert not (work / "note.md").exists()
    assert outcome.reason == "completed"
