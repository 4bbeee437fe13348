"""The real Claude Code (pinned 2.1.332) governed through the hook channel, against ``b10x-emulator``
(docs/adapters/common.md#vendor-decisions; docs/adapters/claude.md; docs/adapters/common.md#endpoint-route endpoint
route: ``--credentials none --model-endpoint http://127.0.0.1:<port>``).

Each test starts the emulator with the ``claude-write`` scenario, runs ``metaharness run claude`` as a
real process with real stdin and stdout in a ``--cwd`` directory, and checks the visible effect (the
note is absent after a deny, present after an allow) and that the stream is well formed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.emulator import running_emulator
from helpers.frames import frame_skeleton
from vendor_cli import PINS, pinned_cli

from metaharness.pure.events import read_event
from metaharness.pure.frames import frame_document, seal_frame

NOTE = "written by the emulator\n"


pytestmark = [
    pytest.mark.skipif(
        pinned_cli("claude") is None,
        reason=f"the pinned Claude Code {PINS['claude']} is not installed on the child's PATH (vendors/install.sh)",
    ),
    pytest.mark.usefixtures("own_home"),
]


@pytest.fixture
def root() -> Iterator[str]:
    """The emulator serving ``claude-write``; yields the gateway root."""
    with running_emulator("--scenario", "claude-write") as (base_url, _):
        yield base_url.removesuffix("/v1")


def frame_file(directory: Path, operations: list[str]) -> Path:
    raw = frame_skeleton("claude/e2e", "write", "write", operations=[{"op": op} for op in operations])
    path = directory / "step.frame.json"
    path.write_bytes(frame_document(seal_frame(raw).unwrap()))
    return path


def start(root: str, cwd: Path, *options: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "metaharness.shell", "run", "claude", "--credentials", "none"]
    argv += ["--model-endpoint", root, "--cwd", str(cwd), "-p", "write the note", *options]
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)


def well_formed(lines: list[bytes]) -> list[dict[str, Any]]:
    """Every line reads as an event, seq runs 1..n, ``stream.closed`` is last and counts the rest."""
    for line in lines:
        read_event(line).unwrap()
    events = [json.loads(line) for line in lines]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["event"] for e in events].count("stream.closed") == 1
    assert events[-1]["event"] == "stream.closed" and events[-1]["events"] == len(events) - 1
    return events


def finish(process: subprocess.Popen[bytes], timeout: float = 120) -> tuple[int, list[dict[str, Any]], str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, well_formed(out.splitlines()), err.decode()


def of(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name]


def run_to_end(root: str, cwd: Path, *options: str) -> tuple[int, list[dict[str, Any]], str]:
    process = start(root, cwd, *options)
    assert process.stdin is not None
    process.stdin.close()
    process.stdin = None
    return finish(process)


def test_a_frame_deny_stops_the_write(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    frame = frame_file(tmp_path, ["file.read", "dir.list", "search"])
    code, events, err = run_to_end(root, work, "--decisions", "frame", "--frame", str(frame))
    assert not (work / "note.md").exists()
    decided = of(events, "tool.decided")
    assert len(decided) == 1, err
    assert decided[0]["decided_by"] == "frame" and decided[0]["seam"] == "hook"
    assert decided[0]["decision"]["decision"] == "deny"
    assert decided[0]["decision"]["reason"].startswith('this step admits ["dir.list", "file.read", "search"] and Write is file.write')
    requested = of(events, "tool.requested")
    assert len(requested) == 1 and requested[0]["seam"] == "hook" and requested[0]["subjects"] == ["file:note.md"]
    ended = of(events, "session.ended")[0]
    assert ended["census"] == {"allowed": 0, "denied": 1, "replaced": 0, "abstained": 0, "by_seam": {"hook": 1},
                               "by_decider": {"frame": 1}}  # fmt: skip
    assert code == 0


def test_a_frame_allow_lets_the_write_run(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    frame = frame_file(tmp_path, ["file.write"])
    code, events, err = run_to_end(root, work, "--decisions", "frame", "--frame", str(frame))
    assert (work / "note.md").read_text() == NOTE, err
    decided = of(events, "tool.decided")
    assert [(d["decision"], d["decided_by"], d["seam"]) for d in decided] == [({"decision": "allow"}, "frame", "hook")]
    assert code == 0 and events[-1]["reason"] == "completed"


def test_observe_allows_and_records(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    code, events, err = run_to_end(root, work, "--decisions", "observe")
    assert (work / "note.md").read_text() == NOTE, err
    assert [(d["decided_by"], d["seam"]) for d in of(events, "tool.decided")] == [("observe", "hook")]
    assert of(events, "session.started")[0]["hermetic"]["decisions"] == "observe"
    assert code == 0


def ask(root: str, cwd: Path, decision: dict[str, Any]) -> tuple[int, list[dict[str, Any]], str]:
    process = start(root, cwd, "--decisions", "ask")
    assert process.stdin is not None and process.stdout is not None
    lines: list[bytes] = []
    while True:
        line = process.stdout.readline()
        assert line, "the stream ended before the call was presented"
        lines.append(line)
        event = json.loads(line)
        if event["event"] == "tool.requested":
            break
    assert event["decision_required"] is True and event["deadline_ms"] == 55000
    command = {"format": "metaharness.command/1", "id": "c1", "command": "tool.decide", "call_id": event["call_id"],
               "decision": decision}  # fmt: skip
    process.stdin.write(json.dumps(command).encode() + b"\n")
    process.stdin.flush()
    out, err = process.communicate(timeout=120)
    return process.returncode, well_formed(lines + out.splitlines()), err.decode()


def test_ask_deny_by_the_embedder(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    code, events, err = ask(root, work, {"decision": "deny", "reason": "notes are written in the next step"})
    assert code == 0
    assert not (work / "note.md").exists()
    decided = of(events, "tool.decided")
    assert [(d["decided_by"], d["decision"]["decision"]) for d in decided] == [("embedder", "deny")], err
    assert isinstance(decided[0]["latency_ms"], int)
    names = [e["event"] for e in events]
    assert names.index("tool.decided") < names.index("command.result")
    assert of(events, "command.result")[0]["outcome"] == {"result": "ok", "applies_at": None}


def test_ask_allow_by_the_embedder(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    code, events, err = ask(root, work, {"decision": "allow"})
    said = f"exit {code}; {err}; {json.dumps(events)}"  # a failure under load names what the run did
    assert (work / "note.md").exists() and (work / "note.md").read_text() == NOTE, said
    assert [(d["decided_by"], d["decision"]) for d in of(events, "tool.decided")] == [("embedder", {"decision": "allow"})], said
    assert code == 0, said


def test_the_deadline_denies_an_unanswered_call(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    process = start(root, work, "--decisions", "ask")
    started = time.monotonic()
    out, err = process.communicate(timeout=120)
    elapsed = time.monotonic() - started
    events = well_formed(out.splitlines())
    assert not (work / "note.md").exists()
    decided = of(events, "tool.decided")
    assert [(d["decided_by"], d["decision"]["decision"]) for d in decided] == [("deadline", "deny")], err.decode()
    assert decided[0]["decision"]["reason"].startswith("metaharness's own 55000ms decision deadline expired")
    assert decided[0]["latency_ms"] >= 55000
    assert 55 <= elapsed < 100


def holding_token(token: bytes) -> list[str]:
    """Every process whose environment or argv holds ``token``, and the files under a metaharness
    scratch root that do."""
    found: list[str] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            for name in ("environ", "cmdline"):
                try:
                    if token in (entry / name).read_bytes():
                        found.append(f"{entry}/{name}")
                except OSError:
                    continue
    folders = [str(scratch) for scratch in Path(os.path.realpath(os.environ.get("TMPDIR", "/tmp"))).glob("metaharness-*")]
    while folders:  # a stack, not recursion: another run's tools may have left a tree deeper than the recursion limit
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif entry.is_file(follow_symlinks=False) and token in Path(entry.path).read_bytes():
                    found.append(entry.path)
            except OSError:
                continue
    return found


def test_loopback_attaches_the_real_token_only_on_the_way_out(tmp_path: Path) -> None:
    token = "sk-ant-oat01-e2e-only-in-custody-4d1f7c"
    custody = tmp_path / "custody"
    custody.mkdir()
    (custody / ".credentials.json").write_text(json.dumps({"claudeAiOauth": {"accessToken": token}}))
    record = tmp_path / "emulator.jsonl"
    work = tmp_path / "work"
    work.mkdir()
    with running_emulator("--scenario", "claude-write", "--record", str(record)) as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "claude", "--credentials", "loopback",
                "--model-endpoint", base_url.removesuffix("/v1"), "--cwd", str(work), "-p", "write the note",
                "--decisions", "ask"]  # fmt: skip
        env = {**os.environ, "CLAUDE_CONFIG_DIR": str(custody)}
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   bufsize=0, env=env)  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        lines: list[bytes] = []
        while not lines or json.loads(lines[-1])["event"] != "tool.requested":
            line = process.stdout.readline()
            assert line, process.stderr.read() if process.stderr else ""
            lines.append(line)
        assert holding_token(token.encode()) == []
        command = {"format": "metaharness.command/1", "id": "c1", "command": "tool.decide",
                   "call_id": json.loads(lines[-1])["call_id"], "decision": {"decision": "allow"}}  # fmt: skip
        process.stdin.write(json.dumps(command).encode() + b"\n")
        out, err = process.communicate(timeout=120)
    stream = b"".join(lines) + out
    events = well_formed(stream.splitlines())
    assert token.encode() not in stream
    assert (work / "note.md").read_text() == NOTE, err.decode()
    seen = [json.loads(line) for line in record.read_text().splitlines()]
    assert seen and all((s["credential_header"], s["credential_length"]) == ("authorization", len(token)) for s in seen)
    assert token not in record.read_text()
    started = of(events, "session.started")[0]
    assert started["credential_source"] == "none"
    h6 = next(row["how"] for row in started["hermetic"]["imposed"] if row["row"] == "H6")
    assert h6.startswith("the child held a per-run placeholder and no credential file")
    assert not any(e.get("code") == "LOOPBACK_REFUSED" for e in events)
    assert process.returncode == 0


def presented(process: subprocess.Popen[bytes]) -> list[bytes]:
    """Read the stream until the first ``tool.requested``."""
    assert process.stdout is not None
    lines: list[bytes] = []
    while not lines or json.loads(lines[-1])["event"] != "tool.requested":
        line = process.stdout.readline()
        assert line, "the stream ended before the call was presented"
        lines.append(line)
    return lines


def test_a_signal_abandons_the_pending_call_and_closes_killed(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    process = start(root, work, "--decisions", "ask")
    lines = presented(process)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    events = well_formed(lines + out.splitlines())
    assert not (work / "note.md").exists()
    decided = of(events, "tool.decided")
    assert [(d["decided_by"], d["decision"]["reason"]) for d in decided] == [
        ("adapter", "the run was interrupted before this call was decided, so nothing ran")
    ], err.decode()
    assert any(e.get("code") == "PENDING_CALL_ABANDONED" for e in events)
    assert events[-1]["reason"] == "killed"
    assert process.returncode == 3


def test_interrupt_abandons_then_answers_ok(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    process = start(root, work, "--decisions", "ask")
    lines = presented(process)
    assert process.stdin is not None
    command = {"format": "metaharness.command/1", "id": "i1", "command": "interrupt", "reason": "enough"}
    process.stdin.write(json.dumps(command).encode() + b"\n")
    out, err = process.communicate(timeout=60)
    events = well_formed(lines + out.splitlines())
    assert not (work / "note.md").exists()
    names = [e["event"] for e in events]
    assert names.index("tool.decided") < names.index("command.result")
    result = of(events, "command.result")[0]
    assert (result["id"], result["outcome"]) == ("i1", {"result": "ok", "applies_at": None}), err.decode()
    assert of(events, "tool.decided")[0]["decision"]["reason"].startswith("the run was interrupted")


def test_a_plugin_dir_reaches_claude_only_as_its_scratch_copy(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    plugin = tmp_path / "operator-plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name":"mh-probe","version":"0.1.0"}')
    code, events, err = run_to_end(root, work, "--decisions", "observe", "--plugin-dir", str(plugin))
    started = of(events, "session.started")[0]
    reported = [(p["name"], p["source"], p["version"]) for p in started["plugins"] if not p["source"].endswith("@builtin")]
    assert reported == [("mh-probe", "mh-probe@inline", "0.1.0")], err
    installed = started["hermetic"]["installed_plugins"]
    assert [(p["name"], p["version"]) for p in installed] == [("mh-probe", "0.1.0")]
    assert installed[0]["source"].startswith(f"{plugin} sha256 ")
    assert code == 0


RUN_DRIVER = """
import json, sys
from metaharness.pure.options import RunOptions
from metaharness.shell.run import execute_run
sys.exit(execute_run(RunOptions(kind="claude", **json.loads(sys.argv[1]))))
"""


def test_retained_files_hold_the_record_and_the_counters_and_never_the_token(tmp_path: Path) -> None:
    token = "sk-ant-oat01-retain-check-0f3a9"
    custody = tmp_path / "custody"
    custody.mkdir()
    (custody / ".credentials.json").write_text(json.dumps({"claudeAiOauth": {"accessToken": token}}))
    retained = tmp_path / "retained"
    retained.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    with running_emulator("--scenario", "claude-write") as (base_url, _):
        options = {"prompt": "write the note", "decisions": "observe", "credentials": "loopback", "cwd": str(work),
                   "model_endpoint": base_url.removesuffix("/v1"), "retain_dir": str(retained)}  # fmt: skip
        done = subprocess.run([sys.executable, "-c", RUN_DRIVER, json.dumps(options)], capture_output=True,
                              env={**os.environ, "CLAUDE_CONFIG_DIR": str(custody)}, stdin=subprocess.DEVNULL,
                              timeout=120, check=False)  # fmt: skip
    events = well_formed(done.stdout.splitlines())
    run_id = events[0]["run"]
    kept = retained / run_id
    names = sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file())
    assert names == ["claude-settings.json", "loopback.json", "transcript.jsonl", "workspace.diff"], names
    assert b'"subtype":"hook_callback"' in (kept / "transcript.jsonl").read_bytes()
    counters = json.loads((kept / "loopback.json").read_text())
    assert counters["forwarded"] >= 2 and counters["refused"] == 0
    for path in kept.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    assert done.returncode == 0, done.stderr.decode()


def test_context_files_reach_the_system_prompt_and_not_the_user_turn(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    (work / "docs").mkdir(parents=True)
    (work / "docs" / "brief.md").write_text("# Brief\n\nMH-CONTEXT-MARKER ship the parser.\n")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "docs/brief.md"], check=True)
    record = tmp_path / "bodies.jsonl"
    with running_emulator("--scenario", "claude-write", "--record", str(record), "--record-bodies") as (base_url, _):
        code, events, err = run_to_end(base_url.removesuffix("/v1"), work, "--decisions", "observe",
                                       "--context", "docs/brief.md")  # fmt: skip
    started = of(events, "session.started")[0]
    assert [(f["path"], f["channel"]) for f in started["context_files"]] == [("docs/brief.md", "append-system-prompt")]
    first = json.loads(record.read_text().splitlines()[0])
    assert "MH-CONTEXT-MARKER" in json.dumps(first["body"]["system"]), err
    messages = json.dumps(first["body"]["messages"])
    assert "MH-CONTEXT-MARKER" not in messages
    assert "<execution-context>" in messages and "inner_harness=claude" in messages
    assert code == 0


def test_ask_replace_runs_the_replacement_input(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    replacement = {"file_path": str(work / "other.md"), "content": "replaced by the embedder\n"}
    code, events, err = ask(root, work, {"decision": "replace", "input": replacement})
    assert not (work / "note.md").exists()
    assert (work / "other.md").read_text() == "replaced by the embedder\n", err
    decided = of(events, "tool.decided")
    assert [(d["decided_by"], d["decision"]) for d in decided] == [("embedder", {"decision": "replace", "input": replacement})]
    assert of(events, "session.ended")[0]["census"]["replaced"] == 1
    assert code == 0


def test_a_frame_in_force_narrows_ask_before_the_embedder(root: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    frame = frame_file(tmp_path, ["file.read"])
    code, events, err = run_to_end(root, work, "--decisions", "ask", "--frame", str(frame))
    assert not (work / "note.md").exists()
    requested = of(events, "tool.requested")
    assert [(r["decision_required"], r["deadline_ms"]) for r in requested] == [(False, None)], err
    assert [d["decided_by"] for d in of(events, "tool.decided")] == ["frame"]
    assert code == 0


CATALOGUE = {
    "format": "metaharness.catalogue/1",
    "entries": [{"name": "file_write", "description": "Write a note in the workspace.", "performs": "file_write",
                 "input": {"path": {"type": "string", "required": True}, "text": {"type": "string", "required": True}}}],
}  # fmt: skip


def catalogue_run(root: str, tmp_path: Path, *options: str) -> tuple[int, list[dict[str, Any]], str, Path]:
    """A claude catalogue run through ``metaharness run claude --tool-surface owned --catalogue``."""
    work = tmp_path / "work"
    work.mkdir()
    catalogue = tmp_path / "tools.json"
    catalogue.write_text(json.dumps(CATALOGUE))
    code, events, err = run_to_end(root, work, "--tool-surface", "owned", "--catalogue", str(catalogue), *options)
    return code, events, err, work


def test_a_catalogue_run_offers_only_the_entries_and_a_frame_allow_performs_the_write(
    root: str, tmp_path: Path
) -> None:
    frame = frame_file(tmp_path, ["file.write"])
    code, events, err, work = catalogue_run(root, tmp_path, "--decisions", "frame", "--frame", str(frame))
    assert (work / "note.md").read_text() == NOTE, err
    started = of(events, "session.started")[0]
    assert started["offered_tools"] == ["mcp__metaharness__file_write"]
    assert [s["name"] for s in started["mcp_servers"]] == ["metaharness"]
    requested = of(events, "tool.requested")
    assert [(r["name"], r["operations"], r["subjects"], r["seam"]) for r in requested] == [
        ("mcp__metaharness__file_write", ["file.write"], ["file:note.md"], "owned_tool")
    ]
    decided = of(events, "tool.decided")
    assert [(d["decided_by"], d["decision"], d["seam"]) for d in decided] == [("frame", {"decision": "allow"}, "owned_tool")]
    assert code == 0


def test_a_catalogue_run_denied_by_the_frame_performs_nothing(root: str, tmp_path: Path) -> None:
    frame = frame_file(tmp_path, ["file.read"])
    code, events, err, work = catalogue_run(root, tmp_path, "--decisions", "frame", "--frame", str(frame))
    assert not (work / "note.md").exists()
    assert [(d["decided_by"], d["decision"]["decision"]) for d in of(events, "tool.decided")] == [("frame", "deny")], err
    assert code == 0


def test_an_unreadable_catalogue_is_refused_before_anything_starts(root: str, tmp_path: Path) -> None:
    options = {"prompt": "x", "credentials": "none", "model_endpoint": root, "tool_surface": "owned",
               "catalogue": str(tmp_path / "missing.yaml"), "decisions": "observe"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", RUN_DRIVER, json.dumps(options)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("metaharness: catalogue-unreadable: ")
