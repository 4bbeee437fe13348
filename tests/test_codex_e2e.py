"""The real Codex CLI (pinned 0.171.0) governed through the hook seam, against ``b10x-emulator``
(docs/adapters/common.md#vendor-decisions; docs/adapters/codex.md; docs/adapters/common.md#endpoint-route endpoint
route: ``--credentials none --model-endpoint http://127.0.0.1:<port>``).

Each test starts the emulator with a vendor scenario, runs ``run_codex`` in a real subprocess with
real stdin and stdout, and reads the stream it writes: every stream must be well formed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from codex_process import CODEX, PINNED, census, decided, of, sealed_frame, well_formed

from metaharness.pure.codex.rollout import RolloutLaunch
from metaharness.pure.codex.vendor import PINS
from metaharness.pure.decisions import open_desk
from metaharness.pure.events import Exited, Transcript
from metaharness.pure.options import RunOptions
from metaharness.shell.codex.live import drive_codex
from metaharness.shell.codex.run import materialise, plan_run
from metaharness.shell.live_engine import StreamLines

pytestmark = [
    pytest.mark.skipif(
        CODEX is None,
        reason=f"the pinned Codex CLI {PINNED} is not installed on the child's PATH (vendors/install.sh)",
    ),
    pytest.mark.usefixtures("own_home"),
]

DRIVER = """
import json, sys
from metaharness.pure.options import RunOptions
from metaharness.shell.run import execute_run
sys.exit(execute_run(RunOptions(kind="codex", **json.loads(sys.argv[1]))))
"""


def start_run(options: dict, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, json.dumps(options)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def endpoint(root: str, **options: object) -> dict:
    return {"prompt": "do the task", "credentials": "none", "model_endpoint": root, **options}


def finish(process: subprocess.Popen[bytes], lines: list[bytes] | None = None) -> tuple[list[dict], int]:
    assert process.stdin is not None and process.stdout is not None
    if not process.stdin.closed:
        process.stdin.close()
    rest, stderr = process.stdout.read(), process.stderr.read()
    code = process.wait(timeout=120)
    raw = [*(lines or []), *rest.splitlines(keepends=True)]
    assert raw, stderr.decode()
    return well_formed(raw), code


def hook_call(events: list[dict], tool: str) -> dict:
    (call,) = [e for e in of(events, "tool.requested") if e["seam"] == "hook" and e["name"] == tool]
    return call


def results_text(events: list[dict]) -> str:
    return json.dumps([e["content"] for e in of(events, "tool.result")])


@pytest.mark.parametrize("emulator", ["codex-shell"], indirect=True)
def test_frame_deny_blocks_the_shell_call_on_the_hook(emulator: str, tmp_path: Path):
    frame = sealed_frame(tmp_path, ["file.read", "dir.list", "search"])
    events, code = finish(start_run(endpoint(emulator, decisions="frame", frame=frame)))
    call = hook_call(events, "Bash")
    assert call["operations"] == ["shell"] and call["decision_required"] is False
    decision = decided(events, call["call_id"])
    assert decision["decided_by"] == "frame" and decision["seam"] == "hook"
    assert decision["decision"]["decision"] == "deny"
    assert "Command blocked by PreToolUse hook: this step admits" in results_text(events)
    assert census(events)["denied"] == 1 and census(events)["by_seam"] == {"hook": 1}
    assert events[-1]["reason"] == "completed" and code == 0


@pytest.mark.parametrize("emulator", ["codex-shell"], indirect=True)
def test_frame_allow_runs_the_shell_call(emulator: str, tmp_path: Path):
    frame = sealed_frame(tmp_path, ["shell"])
    events, code = finish(start_run(endpoint(emulator, decisions="frame", frame=frame)))
    decision = decided(events, hook_call(events, "Bash")["call_id"])
    assert decision["decision"] == {"decision": "allow"} and decision["decided_by"] == "frame"
    assert "blocked" not in results_text(events) and "emulated" in results_text(events)
    assert census(events)["allowed"] == 1 and code == 0


@pytest.mark.parametrize("emulator", ["codex-patch"], indirect=True)
def test_apply_patch_write_denied_by_a_subject_rule_leaves_no_note(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    frame = sealed_frame(
        tmp_path,
        ["file.read", "file.write", "file.edit"],
        [
            {"subject": "file:src/**", "operations": [{"op": "file.write"}, {"op": "file.edit"}]},
            {"subject": "file:**", "operations": [{"op": "file.read"}]},
        ],
    )
    events, _ = finish(start_run(endpoint(emulator, decisions="frame", frame=frame, cwd=str(work))))
    call = hook_call(events, "apply_patch")
    assert call["operations"] == ["file.write"] and call["subjects"] == ["file:note.md"]
    decision = decided(events, call["call_id"])
    assert decision["decision"]["reason"] == (
        "file:note.md falls under the subject rule file:**, which does not admit file.write; "
        "a refusal is the answer, not an obstacle"
    )
    assert not (work / "note.md").exists()
    assert of(events, "turn.started")[0]["frame_digest"] == json.loads(Path(frame).read_text())["digest"]


@pytest.mark.parametrize("emulator", ["codex-patch"], indirect=True)
def test_observe_allows_and_the_note_is_written(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    events, code = finish(start_run(endpoint(emulator, decisions="observe", cwd=str(work))))
    decision = decided(events, hook_call(events, "apply_patch")["call_id"])
    assert decision["decided_by"] == "observe" and decision["decision"] == {"decision": "allow"}
    assert (work / "note.md").read_text() == "written by the emulator\n"
    started = of(events, "session.started")[0]
    assert started["cwd"] == str(work) and started["harness_version"] == PINNED
    (h7,) = [row for row in started["hermetic"]["unavailable"] if row["row"] == "H7"]
    assert 'sandbox_mode = "workspace-write"' in h7["why"] and str(work) in h7["why"]
    assert code == 0


def ask_run(emulator: str, work: Path, decision: dict) -> tuple[list[dict], dict]:
    process = start_run(endpoint(emulator, decisions="ask", cwd=str(work)))
    assert process.stdout is not None and process.stdin is not None
    lines: list[bytes] = []
    while True:
        line = process.stdout.readline()
        assert line, process.stderr.read().decode()
        lines.append(line)
        event = json.loads(line)
        if event["event"] == "tool.requested" and event["decision_required"]:
            break
    assert event["deadline_ms"] == 55000 and event["seam"] == "hook"
    command = {
        "format": "metaharness.command/1",
        "id": "c1",
        "command": "tool.decide",
        "call_id": event["call_id"],
        "decision": decision,
    }
    process.stdin.write(json.dumps(command).encode() + b"\n")
    process.stdin.flush()
    events, _ = finish(process, lines)
    return events, event


@pytest.mark.parametrize("emulator", ["codex-patch"], indirect=True)
def test_ask_deny_from_the_embedder_leaves_no_note(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    events, asked = ask_run(emulator, work, {"decision": "deny", "reason": "notes are written in the next step"})
    decision = decided(events, asked["call_id"])
    assert decision["decided_by"] == "embedder" and decision["latency_ms"] is not None
    result = of(events, "command.result")[0]
    assert result == {**result, "id": "c1", "outcome": {"result": "ok", "applies_at": None}}
    assert events.index(decision) < events.index(result)
    assert not (work / "note.md").exists()
    assert "notes are written in the next step" in results_text(events)


@pytest.mark.parametrize("emulator", ["codex-patch"], indirect=True)
def test_ask_allow_from_the_embedder_writes_the_note(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    events, asked = ask_run(emulator, work, {"decision": "allow"})
    assert decided(events, asked["call_id"])["decision"] == {"decision": "allow"}
    assert (work / "note.md").exists()
    assert census(events)["by_decider"] == {"embedder": 1}


@pytest.mark.parametrize("emulator", ["codex-patch"], indirect=True)
def test_ask_unanswered_is_denied_by_the_deadline_and_the_patch_never_runs(emulator: str, tmp_path: Path):
    """The live loop in-process with a desk whose vendor budget is 4 s (deadline 2 s, half of it), so the real
    hook waits on a real FIFO until metaharness's own deadline denies the call."""
    work = tmp_path / "work"
    work.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700)
    options = RunOptions(
        kind="codex", prompt="do the task", decisions="ask", credentials="none", model_endpoint=emulator, cwd=str(work)
    )
    launch, frame = plan_run(options, str(scratch)).unwrap()
    materialise(launch)
    lines = StreamLines("codex-deadline")
    rollout = RolloutLaunch(
        program=launch.program,
        pins=PINS,
        transcript=Transcript(path=launch.rollout_copy, digest=None, bytes=None),
        hermetic=launch.hermetic,
    )
    outcome = drive_codex(
        launch=launch,
        desk=open_desk("ask", frame, 4_000),
        rollout=rollout,
        run="codex-deadline",
        write_event=lines.write,
        commands=None,
        on_steering_refusal=lambda line: None,
    )
    events = well_formed(bytes(lines.lines).splitlines(keepends=True))
    call = hook_call(events, "apply_patch")
    assert call["decision_required"] is True and call["deadline_ms"] == 2000
    decision = decided(events, call["call_id"])
    assert decision["decided_by"] == "deadline" and decision["latency_ms"] >= 2000
    assert decision["decision"]["reason"] == (
        "metaharness's own 2000ms decision deadline expired before an answer arrived; it is strictly less than "
        "the vendor's 4000ms timeout so the refusal is metaharness's and not an ambiguity"
    )
    assert not (work / "note.md").exists()
    assert outcome.reason == "completed" and outcome.process == Exited(code=0)


TOKEN = "sk-test-custody-token-0123456789abcdef"


@pytest.mark.parametrize("emulator", ["codex-shell"], indirect=True)
def test_loopback_attaches_the_custody_token_upstream_and_the_child_never_holds_it(emulator: str, tmp_path: Path):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "codex").symlink_to(CODEX)
    (home / ".codex" / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": TOKEN}))
    retained = tmp_path / "retained"
    retained.mkdir()
    options = {"prompt": "run the check", "decisions": "observe", "credentials": "loopback", "model_endpoint": emulator}
    events, code = finish(start_run({**options, "retain_dir": str(retained)}, env={**os.environ, "HOME": str(home)}))
    assert code == 0 and events[-1]["reason"] == "completed"
    requests = [json.loads(line) for line in (tmp_path / "emulator.jsonl").read_text().splitlines()]
    assert requests and all(r["path"] == "/v1/responses" for r in requests)
    assert {(r["credential_header"], r["credential_length"]) for r in requests} == {("authorization", len(TOKEN))}
    started = of(events, "session.started")[0]
    (h6,) = [row for row in started["hermetic"]["imposed"] if row["row"] == "H6"]
    assert h6["how"].startswith("the child held a per-run placeholder and no credential file")
    assert str(home / ".codex" / "auth.json") in h6["how"]
    (run_dir,) = retained.iterdir()
    config = (run_dir / "codex-home" / "config.toml").read_text()
    assert 'env_key = "METAHARNESS_LOOPBACK_KEY"' in config and 'model_provider = "metaharness_loopback"' in config
    assert json.loads((run_dir / "loopback.json").read_text())["forwarded"] == len(requests)
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    assert TOKEN not in json.dumps(events)


@pytest.mark.parametrize("emulator", ["codex-shell"], indirect=True)
def test_loopback_child_environment_holds_the_placeholder_never_the_token(emulator: str, tmp_path: Path, monkeypatch):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": TOKEN}))
    monkeypatch.setenv("HOME", str(home))
    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700)
    options = RunOptions(kind="codex", prompt="p", decisions="observe", credentials="loopback", model_endpoint=emulator)
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "codex").symlink_to(CODEX)
    launch, _ = plan_run(
        options, str(scratch), (str(home / ".codex" / "auth.json"), "mh-run-codex-1-00", "43210")
    ).unwrap()
    environment = launch.environment.as_dict()
    assert environment["METAHARNESS_LOOPBACK_KEY"] == "mh-run-codex-1-00"
    assert all(TOKEN not in value for value in environment.values())
    assert launch.credential_file is None


def ask_and_send(emulator: str, work: Path, *commands: dict) -> tuple[list[dict], dict, int]:
    """An ask run that answers the first presented call with ``commands`` (``call_id`` filled in)."""
    process = start_run(endpoint(emulator, decisions="ask", cwd=str(work)))
    assert process.stdout is not None and process.stdin is not None
    lines: list[bytes] = []
    while True:
        line = process.stdout.readline()
        assert line, process.stderr.read().decode()
        lines.append(line)
        event = json.loads(line)
        if event["event"] == "tool.requested" and event["decision_required"]:
            break
    for number, command in enumerate(commands, start=1):
        filled = {"format": "metaharness.command/1", "id": f"c{number}", **command}
        if "call_id" in filled:
            filled["call_id"] = event["call_id"]
        process.stdin.write(json.dumps(filled).encode() + b"\n")
        process.stdin.flush()
    events, code = finish(process, lines)
    return events, event, code


OTHER_PATCH = "*** Begin Patch\n*** Add File: other.md\n+replaced by the embedder\n*** End Patch\n"


@pytest.mark.parametrize("emulator", ["codex-patch"], indirect=True)
def test_replace_rewrites_the_patch_codex_runs(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    decision = {"decision": "replace", "input": {"command": OTHER_PATCH}}
    events, asked, _ = ask_and_send(emulator, work, {"command": "tool.decide", "call_id": "", "decision": decision})
    assert decided(events, asked["call_id"])["decision"] == decision
    assert (work / "other.md").read_text() == "replaced by the embedder\n"
    assert not (work / "note.md").exists()
    assert census(events)["replaced"] == 1


@pytest.mark.parametrize("emulator", ["codex-patch"], indirect=True)
def test_replace_without_a_string_command_is_malformed_and_the_call_stays_open(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    malformed = {"decision": "replace", "input": {"patch": OTHER_PATCH}}
    deny = {"decision": "deny", "reason": "not in this step"}
    events, asked, _ = ask_and_send(
        emulator,
        work,
        {"command": "tool.decide", "call_id": "", "decision": malformed},
        {"command": "tool.decide", "call_id": "", "decision": deny},
    )
    first, second = of(events, "command.result")
    assert first["id"] == "c1" and first["outcome"]["refused"]["code"] == "MALFORMED"
    assert second["id"] == "c2" and second["outcome"] == {"result": "ok", "applies_at": None}
    assert decided(events, asked["call_id"])["decision"] == deny
    assert not (work / "note.md").exists() and not (work / "other.md").exists()


@pytest.mark.parametrize("emulator", ["codex-patch"], indirect=True)
def test_halt_denies_the_pending_call_first_and_closes_steer_halt(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    events, asked, code = ask_and_send(emulator, work, {"command": "halt", "reason": "stop here"})
    decision = decided(events, asked["call_id"])
    assert decision["decided_by"] == "adapter"
    assert decision["decision"]["reason"] == "the run was halted before this call was decided, so nothing ran"
    warning = events[events.index(decision) + 1]
    assert warning["code"] == "PENDING_CALL_ABANDONED"
    assert of(events, "command.result")[0]["outcome"] == {"result": "ok", "applies_at": None}
    assert events[-1]["reason"] == "steer-halt" and code == 3
    assert not (work / "note.md").exists()


@pytest.mark.parametrize("emulator", ["codex-shell"], indirect=True)
def test_frame_mode_without_a_frame_abstains_once_warned(emulator: str, tmp_path: Path):
    events, _ = finish(start_run(endpoint(emulator, decisions="frame")))
    call = hook_call(events, "Bash")
    decision = decided(events, call["call_id"])
    assert decision["decision"] == {"decision": "abstain"}
    assert (decision["decided_by"], decision["seam"]) == ("adapter", "none")
    assert [w["code"] for w in of(events, "warning")].count("NO_FRAME_IN_FORCE") == 1
    assert "emulated" in results_text(events)


@pytest.mark.parametrize("emulator", ["codex-patch"], indirect=True)
def test_sigterm_to_metaharness_abandons_the_pending_call_and_closes_killed(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    process = start_run(endpoint(emulator, decisions="ask", cwd=str(work)))
    assert process.stdout is not None
    lines: list[bytes] = []
    while True:
        line = process.stdout.readline()
        assert line, process.stderr.read().decode()
        lines.append(line)
        if json.loads(line)["event"] == "tool.requested" and json.loads(line)["decision_required"]:
            break
    process.send_signal(signal.SIGTERM)
    events, code = finish(process, lines)
    asked = json.loads(lines[-1])
    decision = decided(events, asked["call_id"])
    assert decision["decision"]["reason"] == "the run was interrupted before this call was decided, so nothing ran"
    assert events[-1]["reason"] == "killed" and code == 3
    assert not (work / "note.md").exists()
