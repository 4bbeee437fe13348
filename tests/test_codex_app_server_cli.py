"""``metaharness run codex --tool-surface owned --catalogue FILE`` as a user runs it: the real
``codex app-server`` (pinned 0.171.0) against ``b10x-emulator`` scenario ``codex-catalogue-write``
(docs/adapters/codex.md, docs/hermetic.md#catalogue-delivery, #catalogue-refusals)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from codex_process import CODEX, census, decided, of, sealed_frame, well_formed

from metaharness.pure.catalogue import load_catalogue, scratch_copy
from metaharness.pure.jsonline import sha256_hex

pytestmark = [
    pytest.mark.skipif(
        CODEX is None, reason="the pinned Codex CLI 0.171.0 is not installed on the child's PATH (vendors/install.sh)"
    ),
    pytest.mark.usefixtures("own_home"),
]

CATALOGUE = {
    "format": "metaharness.catalogue/1",
    "entries": [
        {
            "name": "write_note",
            "description": "Write one note in the workspace.",
            "performs": "file_write",
            "input": {"path": {"type": "string", "required": True}, "text": {"type": "string", "required": True}},
        }
    ],
}
METAHARNESS = str(Path(sys.executable).with_name("metaharness"))


def owned_call(events: list[dict]) -> dict:
    (call,) = [e for e in of(events, "tool.requested") if e["seam"] == "owned_tool"]
    return call


def cli_run(root: str, tmp_path: Path, *extra: str, stdin: bytes = b"") -> tuple[list[dict], int, str]:
    """``metaharness run codex --tool-surface owned --catalogue tools.json`` as a user runs it."""
    source = tmp_path / "tools.json"
    source.write_text(json.dumps(CATALOGUE))
    argv = [METAHARNESS, "run", "codex", "-p", "write the note", "--credentials", "none", "--model-endpoint", root,
            "--tool-surface", "owned", "--catalogue", str(source), *extra]  # fmt: skip
    done = subprocess.run(argv, input=stdin, capture_output=True, timeout=120, check=False)
    return well_formed(done.stdout.splitlines(keepends=True)), done.returncode, done.stderr.decode()


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_metaharness_run_codex_with_a_catalogue_writes_what_the_frame_allows(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    frame = sealed_frame(tmp_path, ["file.write"])
    events, code, stderr = cli_run(emulator, tmp_path, "--cwd", str(work), "--frame", frame)
    assert code == 0, stderr
    decision = decided(events, owned_call(events)["call_id"])
    assert decision["decided_by"] == "frame" and decision["decision"] == {"decision": "allow"}
    assert (work / "note.md").read_text() == "written by the emulator\n"
    digest = json.loads(Path(frame).read_text())["digest"]
    assert of(events, "turn.started")[0]["frame_digest"] == digest
    copy = scratch_copy(load_catalogue(json.dumps(CATALOGUE).encode(), "tools.json").unwrap())
    (h10,) = [row for row in of(events, "session.started")[0]["hermetic"]["imposed"] if row["row"] == "H10"]
    assert f"frame {digest}" in json.dumps(h10) and f"catalogue copy sha256 {sha256_hex(copy)}" in json.dumps(h10)
    assert events[-1]["reason"] == "completed" and events[-1]["process"] == {"kind": "exited", "code": 0}


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_metaharness_run_codex_with_a_catalogue_denies_what_the_frame_does_not_admit(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    retained = tmp_path / "retained"
    retained.mkdir()
    frame = sealed_frame(tmp_path, ["file.read"])
    events, code, stderr = cli_run(
        emulator, tmp_path, "--cwd", str(work), "--frame", frame, "--retain-dir", str(retained)
    )
    assert code == 0, stderr
    decision = decided(events, owned_call(events)["call_id"])
    assert decision["decided_by"] == "frame" and decision["decision"]["decision"] == "deny"
    assert not (work / "note.md").exists()
    assert census(events)["by_seam"] == {"owned_tool": 1}
    (kept,) = retained.iterdir()
    copy = scratch_copy(load_catalogue(json.dumps(CATALOGUE).encode(), "tools.json").unwrap())
    assert (kept / "catalogue.json").read_bytes() == copy
    conversation = [json.loads(line) for line in (kept / "rollout.stdout.jsonl").read_bytes().splitlines()]
    assert any(message.get("method") == "item/tool/call" for message in conversation)


def test_metaharness_run_codex_refuses_a_reserved_entry_name_before_the_spawn(tmp_path: Path):
    source = tmp_path / "tools.json"
    document = {
        "format": "metaharness.catalogue/1",
        "entries": [{"name": "mcp__x", "description": "d", "performs": "file_read"}],
    }
    source.write_text(json.dumps(document))
    argv = [METAHARNESS, "run", "codex", "-p", "x", "--credentials", "none", "--tool-surface", "owned",
            "--catalogue", str(source)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith("metaharness: catalogue-name-reserved: ")


def asked_run(root: str, tmp_path: Path, work: Path, decision: dict | None) -> tuple[list[dict], dict, int]:
    """An ``--decisions ask`` run: the first asked call is answered by a ``tool.decide`` on stdin, or
    the run is halted when ``decision`` is ``None``."""
    source = tmp_path / "tools.json"
    source.write_text(json.dumps(CATALOGUE))
    argv = [METAHARNESS, "run", "codex", "-p", "write the note", "--credentials", "none", "--model-endpoint", root,
            "--tool-surface", "owned", "--catalogue", str(source), "--cwd", str(work), "--decisions", "ask"]  # fmt: skip
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    lines: list[bytes] = []
    while True:
        line = process.stdout.readline()
        assert line, process.stderr.read().decode()
        lines.append(line)
        asked = json.loads(line)
        if asked["event"] == "tool.requested" and asked["decision_required"]:
            break
    command = {"format": "metaharness.command/1", "id": "c1", "command": "halt", "reason": "the step was cancelled"}
    if decision is not None:
        command = {**command, "command": "tool.decide", "call_id": asked["call_id"], "decision": decision}
        del command["reason"]
    process.stdin.write(json.dumps(command).encode() + b"\n")
    process.stdin.close()
    lines += process.stdout.read().splitlines(keepends=True)
    code = process.wait(timeout=120)
    return well_formed(lines), asked, code


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_an_embedder_deny_of_a_catalogue_call_writes_nothing_and_the_model_reads_the_reason(
    emulator: str, tmp_path: Path
):
    work = tmp_path / "work"
    work.mkdir()
    events, asked, code = asked_run(emulator, tmp_path, work, {"decision": "deny", "reason": "not in this step"})
    assert asked["seam"] == "owned_tool" and asked["deadline_ms"] == 55000 and asked["name"] == "write_note"
    decision = decided(events, asked["call_id"])
    assert decision["decided_by"] == "embedder" and decision["decision"]["reason"] == "not in this step"
    assert not (work / "note.md").exists()
    assert any("not in this step" in item["text"] for e in of(events, "tool.result") for item in e["content"])
    assert code == 0 and census(events)["by_decider"] == {"embedder": 1}


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_an_embedder_replace_performs_the_replacement_input(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    replacement = {"path": "elsewhere.md", "text": "replaced\n"}
    events, asked, code = asked_run(emulator, tmp_path, work, {"decision": "replace", "input": replacement})
    assert decided(events, asked["call_id"])["decision"] == {"decision": "replace", "input": replacement}
    assert (work / "elsewhere.md").read_text() == "replaced\n" and not (work / "note.md").exists()
    assert code == 0 and census(events)["replaced"] == 1


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_a_halt_while_a_catalogue_call_waits_denies_it_and_writes_nothing(emulator: str, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    events, asked, _ = asked_run(emulator, tmp_path, work, None)
    decision = decided(events, asked["call_id"])
    assert decision["decided_by"] == "adapter"
    assert decision["decision"]["reason"] == "the run was halted before this call was decided, so nothing ran"
    assert not (work / "note.md").exists()
    (result,) = of(events, "command.result")
    assert result["id"] == "c1" and events.index(decision) < events.index(result)
    assert events[-1]["reason"] == "steer-halt"


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_an_app_server_that_cannot_be_started_is_spawn_failed_and_its_catalogue_server_and_scratch_are_released(
    emulator: str, tmp_path: Path
):
    """The app-server is spawned through the live engine's ``spawn``, after the catalogue server: a ``codex`` on
    the PATH floor (``$HOME/.local/bin``) whose interpreter is missing fails at the spawn, which the run engine refuses ``spawn-failed`` (exit 2)
    with the catalogue server ended and the scratch root removed (unconfined: in a view bwrap itself starts)."""
    bin_dir = tmp_path / "home" / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    program = bin_dir / "codex"
    program.write_text("#!/nonexistent/interpreter\n")
    program.chmod(0o755)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    source = tmp_path / "tools.json"
    source.write_text(json.dumps(CATALOGUE))
    argv = [METAHARNESS, "run", "codex", "-p", "write the note", "--credentials", "none", "--model-endpoint", emulator,
            "--decisions", "observe", "--confine", "off", "--tool-surface", "owned", "--catalogue", str(source)]
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(temporary)}
    done = subprocess.run(argv, capture_output=True, timeout=120, check=False, env=env)
    assert done.returncode == 2, done.stderr
    assert f"spawn-failed: {program} could not be started" in done.stderr.decode()
    assert list(temporary.iterdir()) == []


def _live_processes_under(root: Path) -> list[int]:
    """The live (not zombie) processes whose command line names a path under ``root``."""
    found = []
    for entry in (name for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()):
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if os.fsencode(str(root)) in words and state != "Z":
            found.append(int(entry))
    return found


@pytest.mark.parametrize("emulator", ["codex-catalogue-write"], indirect=True)
def test_a_signal_while_a_catalogue_call_waits_ends_both_servers_and_removes_the_scratch(emulator: str, tmp_path: Path):
    """The run engine's signals cover the app-server loop: SIGTERM while the owned call waits for the embedder
    abandons it, stops the app-server's group, ends the catalogue server and removes the scratch root."""
    work = tmp_path / "work"
    work.mkdir()
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    source = tmp_path / "tools.json"
    source.write_text(json.dumps(CATALOGUE))
    argv = [METAHARNESS, "run", "codex", "-p", "write the note", "--credentials", "none", "--model-endpoint", emulator,
            "--decisions", "ask", "--confine", "off", "--cwd", str(work), "--tool-surface", "owned",
            "--catalogue", str(source)]  # fmt: skip
    env = {**os.environ, "TMPDIR": str(temporary)}
    process = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        event = json.loads(line)
        if event["event"] == "tool.requested" and event["seam"] == "owned_tool":
            break
    assert _live_processes_under(temporary), "the catalogue server runs over the scratch copy"
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    events = well_formed([*lines, *out.splitlines(keepends=True)])
    decision = decided(events, owned_call(events)["call_id"])
    assert decision["decision"]["decision"] == "deny" and decision["decided_by"] == "adapter"
    assert events[-1]["event"] == "stream.closed" and events[-1]["reason"] == "killed" and process.returncode == 3
    assert b"Traceback" not in err
    assert not (work / "note.md").exists()
    assert not _live_processes_under(temporary)
    assert list(temporary.iterdir()) == []
