"""The codex arm through the ``metaharness`` console script: ``run``, ``replay``, ``conformance``,
``doctor`` and ``project --from codex`` reach the codex functions (docs/cli.md#run; docs/adapters/common.md#descriptor,
#conformance, #doctor; docs/cli.md#audit, #project; docs/events.md#replay, docs/adapters/common.md#pins;
docs/adapters/codex.md#conformance-vectors). ``run`` drives the real Codex CLI against ``b10x-emulator``."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from codex_process import sealed_frame
from helpers.emulator import running_emulator
from vendor_cli import pinned_cli

from metaharness.pure.events import read_event

PINNED = "0.171.0"
SCRIPT = str(Path(sys.executable).with_name("metaharness"))
VECTORS = Path(__file__).parent.parent / "vectors" / "codex"


def metaharness(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [SCRIPT, *args], capture_output=True, stdin=subprocess.DEVNULL, cwd=cwd, timeout=180, check=False
    )


needs_codex = pytest.mark.skipif(pinned_cli("codex") is None, reason=f"the pinned Codex CLI {PINNED} is not installed")
pytestmark = pytest.mark.usefixtures("own_home")


def events_of(stdout: bytes) -> list[dict]:
    lines = stdout.splitlines(keepends=True)
    for number, line in enumerate(lines, start=1):
        assert read_event(line).unwrap().seq == number
    return [json.loads(line) for line in lines]


def test_replay_codex_maps_the_vector_record_byte_for_byte() -> None:
    done = metaharness("replay", "codex", "record/shell.jsonl", "--run", "golden", cwd=VECTORS)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (VECTORS / "record" / "shell.expected.jsonl").read_bytes()


def test_replay_codex_refuses_an_unreadable_record(tmp_path: Path) -> None:
    done = metaharness("replay", "codex", str(tmp_path / "missing.jsonl"))
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode().startswith("metaharness: record-unreadable: ")


def test_project_from_codex_names_the_rollout_source_and_digests_the_record(tmp_path: Path) -> None:
    record = (VECTORS / "record" / "patch.jsonl").read_bytes()
    (tmp_path / "rollout.jsonl").write_bytes(record)
    done = metaharness("project", "rollout.jsonl", "--from", "codex", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["metaharness"]["source"] == "codex.rollout"
    assert document["transcript_digest"] == hashlib.sha256(record).hexdigest()
    assert document["metaharness"]["vendor_transcript"] == {"path": "rollout.jsonl", "digest": None, "bytes": None}
    assert [n["family"] for n in document["nodes"]][:1] == ["session_start"]
    assert document["nodes"][-1]["family"] == "stream_closed"


def test_conformance_codex_runs_its_nine_vectors() -> None:
    done = metaharness("conformance", "codex")
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 0, done.stdout
    assert lines[-1] == "9 vectors, 0 failed — no model, no network, no credential"
    contract = metaharness("conformance", "codex", "--contract")
    line = json.loads(contract.stdout)
    assert contract.returncode == 0 and (line["kind"], line["checked"], line["failed"]) == ("contract_result", 9, 0)


@needs_codex
def test_doctor_codex_reports_the_pinned_binary() -> None:
    done = metaharness("doctor", "codex", "--credentials", "none")
    assert done.returncode == 0, done.stderr
    first = done.stdout.decode().splitlines()[0]
    assert first.startswith("codex: ") and first.endswith(f"{PINNED} — on the adapter's pin ({PINNED})")


@needs_codex
def test_run_codex_frame_deny_through_the_cli(tmp_path: Path) -> None:
    frame = sealed_frame(tmp_path, ["file.read", "dir.list", "search"])
    with running_emulator("--scenario", "codex-shell") as (base_url, _):
        done = metaharness(
            "run", "codex", "-p", "do the task", "--credentials", "none",
            "--model-endpoint", base_url.removesuffix("/v1"), "--frame", frame,
        )  # fmt: skip
    events = events_of(done.stdout)
    (call,) = [e for e in events if e["event"] == "tool.requested" and e["name"] == "Bash"]
    (decision,) = [e for e in events if e["event"] == "tool.decided"]
    assert decision["call_id"] == call["call_id"] and decision["decided_by"] == "frame"
    assert decision["decision"]["decision"] == "deny"
    assert [e["census"]["denied"] for e in events if e["event"] == "session.ended"] == [1]
    assert events[-1]["event"] == "stream.closed" and events[-1]["reason"] == "completed"
    assert done.returncode == 0, done.stderr
