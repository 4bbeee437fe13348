"""``project``: the trace-ir/1 document and the viewer page as pure functions, and the verb through the
console script (docs/cli.md#project)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.emulator import running_emulator
from project_verb import metaharness
from returns.result import Failure
from shared_tree import ABSENT, SPEC_EXAMPLE, spec_example_stream

from metaharness.pure.projection import document_text, project_stream
from metaharness.pure.run_page import run_page

HERMETIC = {
    "mode": "strict",
    "decisions": "frame",
    "imposed": [],
    "declared": [],
    "unavailable": [],
    "ambient_inputs": [],
    "installed_plugins": [],
}


def started(run: str, **extra: Any) -> dict[str, Any]:
    return {
        "event": "session.started",
        "adapter": "b10x",
        "adapter_class": "direct_provider",
        "harness_version": "0.22.0",
        "session_id": None,
        "model": "b10x-emulated",
        "permission_mode": None,
        "credential_source": None,
        "output_style": None,
        "cwd": "/w",
        "offered_tools": ["file_read"],
        "available_operations": ["file.read"],
        "withheld": [{"tool": "run", "reason": "no program allowed"}],
        "slash_commands": None,
        "skills": [],
        "agents": [],
        "plugins": None,
        "mcp_servers": [],
        "inputs_digest": None,
        "transcript": {"path": "/r/record.jsonl", "digest": None, "bytes": None},
        "hermetic": HERMETIC,
        **extra,
    }


def stream(run: str, payloads: list[dict[str, Any]], *, close: bool = True, events: int | None = None) -> bytes:
    """Event lines as docs/events.md#serialisation writes them: framing keys first, compact, one per line."""
    lines = []
    for seq, payload in enumerate(payloads, start=1):
        body = {"format": "metaharness.event/1", "seq": seq, "run": run, **payload}
        lines.append(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
    if close:
        closing = {
            "format": "metaharness.event/1",
            "seq": len(payloads) + 1,
            "run": run,
            "event": "stream.closed",
            "events": len(payloads) if events is None else events,
            "reason": "completed",
            "run_id": run,
            "process": {"kind": "exited", "code": 0},
        }
        lines.append(json.dumps(closing, separators=(",", ":")))
    return "".join(line + "\n" for line in lines).encode("utf-8")


RUN_A = [
    started("b10x-1"),
    {"event": "turn.started", "turn": 1, "frame_digest": None},
    {"event": "text", "text": "<script>go</script> Reading <the> file & more " + "x" * 300, "request_id": None},
    {"event": "tool.requested", "call_id": "c1", "name": "file_read", "input": {"path": "a.md"},
     "operations": ["file.read"], "subjects": ["file:a.md"], "decision_required": False, "deadline_ms": None, "seam": "none"},
    {"event": "tool.decided", "call_id": "c1", "decision": {"decision": "allow"}, "decided_by": "frame",
     "seam": "control_request", "latency_ms": None},
    {"event": "tool.result", "exit_code": None, "outcome_source": None, "call_id": "c1", "is_error": False,
     "content": "<script>alert(1)</script>", "bytes": 25, "tool_use_result": None},
    {"event": "warning", "code": "UNVERIFIED_TIER", "message": "m"},
]


def document(data: bytes, name: str = "a.jsonl") -> dict[str, Any]:
    projected = project_stream(name, data).unwrap()
    parsed: dict[str, Any] = json.loads(document_text(projected))
    return parsed


def test_document_nodes_families_and_summary() -> None:
    data = stream("b10x-1", RUN_A)
    doc = document(data)
    assert list(doc) == ["format", "run", "transcript_digest", "nodes", "metaharness"]
    assert doc["format"] == "trace-ir/1"
    assert doc["run"] == "b10x-1"
    assert doc["transcript_digest"] == hashlib.sha256(data).hexdigest()
    nodes = doc["nodes"]
    assert [n["index"] for n in nodes] == list(range(8))
    assert [n["seq"] for n in nodes] == list(range(1, 9))
    assert [(n["event"], n["family"]) for n in nodes] == [
        ("session.started", "session_start"),
        ("turn.started", "unk"),
        ("text", "assistant_text"),
        ("tool.requested", "tool_call"),
        ("tool.decided", "unk"),
        ("tool.result", "tool_result"),
        ("warning", "unk"),
        ("stream.closed", "stream_closed"),
    ]
    assert [n["reason"] for n in nodes] == [None, "no trace-ir/1 family", None, None, "no trace-ir/1 family", None,
                                            "no trace-ir/1 family", None]
    assert [n["call_id"] for n in nodes] == [None, None, None, "c1", "c1", "c1", None, None]
    assert all(list(n) == ["index", "seq", "family", "event", "at", "call_id", "reason", "data"] for n in nodes)
    assert nodes[3]["data"] == {k: v for k, v in RUN_A[3].items() if k != "event"}
    assert list(nodes[0]["data"]) == [k for k in RUN_A[0] if k != "event"]
    assert doc["metaharness"] == {
        "source": "metaharness.event/1",
        "vendor_transcript": {"path": "/r/record.jsonl", "digest": None, "bytes": None},
        "withheld": [{"tool": "run", "reason": "no program allowed"}],
        "available_operations": ["file.read"],
        "hermetic": HERMETIC,
        "stream_complete": "complete",
    }


def test_document_bytes_are_two_space_indented_with_a_trailing_newline() -> None:
    text = document_text(project_stream("a.jsonl", stream("b10x-1", RUN_A)).unwrap())
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"


def test_at_is_copied_and_absent_keys_are_null() -> None:
    payloads = [{"event": "text", "text": "hi", "request_id": "r", "at": "2026-11-30T00:00:00Z"}]
    doc = document(stream("claude-9", payloads))
    assert doc["nodes"][0]["at"] == "2026-11-30T00:00:00Z"
    assert "at" not in doc["nodes"][0]["data"]
    assert doc["nodes"][1]["at"] is None
    assert doc["metaharness"]["vendor_transcript"] is None
    assert doc["metaharness"]["available_operations"] is None


@pytest.mark.parametrize(
    ("data", "state"),
    [
        (stream("r", RUN_A), "complete"),
        (stream("r", RUN_A, close=False), "truncated"),
        (stream("r", RUN_A, events=3), "inconsistent"),
        (stream("r", RUN_A[:1]) + stream("r", RUN_A[:1]).replace(b'"seq":1', b'"seq":3').replace(b'"seq":2', b'"seq":4'),
         "inconsistent"),
    ],
)
def test_stream_completeness(data: bytes, state: str) -> None:
    assert document(data)["metaharness"]["stream_complete"] == state


def test_a_marker_that_is_not_the_last_line_is_inconsistent() -> None:
    closed = stream("r", RUN_A[:1])
    trailing = json.dumps({"format": "metaharness.event/1", "seq": 3, "run": "r", "event": "text", "text": "late",
                           "request_id": None}, separators=(",", ":"))
    assert document(closed + trailing.encode() + b"\n")["metaharness"]["stream_complete"] == "inconsistent"


@pytest.mark.parametrize(
    ("data", "line", "detail"),
    [
        (b'{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","text":"a","request_id":null}\nnot json\n', 2,
         "not a JSON object"),
        (b'{"format":"other/1","seq":1}\n', 1, 'unknown format tag "other/1"'),
        (b'{"format":"metaharness.event/1","seq":1,"run":"r","event":"nope"}\n', 1, 'unknown event name "nope"'),
        (b"\n", 1, "not a JSON object"),
        (b"", 1, "no metaharness.event/1 line"),
    ],
)
def test_an_unreadable_line_is_refused_naming_file_and_line(data: bytes, line: int, detail: str) -> None:
    refused = project_stream("runs/a.jsonl", data)
    assert isinstance(refused, Failure)
    assert refused.failure().code == "projection-unreadable"
    assert refused.failure().message.startswith(f"runs/a.jsonl line {line}: ")
    assert detail in refused.failure().message


def test_a_run_differing_from_the_first_lines_is_refused() -> None:
    data = stream("a", RUN_A[1:3]).replace(b'"seq":2,"run":"a"', b'"seq":2,"run":"b"')
    refused = project_stream("x.jsonl", data).failure()
    assert refused.code == "projection-unreadable"
    assert refused.message.startswith("x.jsonl line 2: ")


def page_of(*runs: bytes) -> str:
    return run_page([project_stream(f"{i}.jsonl", data).unwrap() for i, data in enumerate(runs)])


def test_project_verb_one_input_to_stdout_and_files(tmp_path: Path) -> None:
    data = stream("b10x-1", RUN_A)
    (tmp_path / "a.jsonl").write_bytes(data)
    result = metaharness("a.jsonl", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == b""
    expected = document_text(project_stream("a.jsonl", data).unwrap()).encode()
    assert result.stdout == expected
    written = metaharness("a.jsonl", "--to", "trace-ir", "--out", "doc.json", "--html", "page.html", cwd=tmp_path)
    assert written.returncode == 0 and written.stdout == b""
    assert (tmp_path / "doc.json").read_bytes() == expected
    assert (tmp_path / "page.html").read_text(encoding="utf-8") == page_of(data)


def test_project_verb_shows_each_runs_audited_lines_from_its_report(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(stream("b10x-1", RUN_A))
    (tmp_path / "b.jsonl").write_bytes(stream("b10x-2", RUN_A[:2]))
    (tmp_path / "a.txt").write_text("hermetic verdict …\n  H3   ok  …\nchild exit: 0\ncontrol verdict: unk\n"
                                    "audit verdict: no verdict (exit 3)\n")
    result = metaharness("a.jsonl", "b.jsonl", "--html", "page.html", "--report", "a.txt", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == b""
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert page.count('<pre class="audited">') == 1
    assert '<pre class="audited">child exit: 0\ncontrol verdict: unk\naudit verdict: no verdict (exit 3)</pre>' in page


def test_project_verb_two_inputs_write_the_page(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(stream("b10x-1", RUN_A))
    (tmp_path / "b.jsonl").write_bytes(stream("b10x-2", RUN_A[:2]))
    result = metaharness("a.jsonl", "b.jsonl", "--html", "page.html", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == b""
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert '<th class="k">#</th><th>b10x-1</th><th>b10x-2</th>' in page


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["a.jsonl", "--to", "otel"], "projection-target-unknown"),
        (["a.jsonl", "a.jsonl", "a.jsonl", "--html", "p.html"], "viewer-column-count"),
        (["a.jsonl", "a.jsonl"], "viewer-column-count"),
        (["a.jsonl", "a.jsonl", "--html", "p.html", "--out", "d.json"], "viewer-column-count"),
        (["missing.jsonl"], "projection-unreadable"),
        (["bad.jsonl"], "projection-unreadable"),
        (["a.jsonl", "--report", "stderr.txt"], "report-without-html"),
        (["a.jsonl", "--html", "p.html", "--report", "stderr.txt", "--report", "stderr.txt"], "viewer-column-count"),
        (["a.jsonl", "--html", "p.html", "--report", "missing.txt"], "projection-unreadable"),
    ],
)
def test_project_refusals(tmp_path: Path, args: list[str], code: str) -> None:
    (tmp_path / "a.jsonl").write_bytes(stream("b10x-1", RUN_A))
    (tmp_path / "bad.jsonl").write_bytes(stream("b10x-1", RUN_A) + b"[1]\n")
    (tmp_path / "stderr.txt").write_text("child exit: 0\n")
    result = metaharness(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"metaharness: {code}: ")
    assert not (tmp_path / "p.html").exists()
    if args == ["bad.jsonl"]:
        assert lines[0].startswith("metaharness: projection-unreadable: bad.jsonl line 9: ")


@pytest.mark.skipif(not SPEC_EXAMPLE.exists(), reason=ABSENT)
def test_the_spec_example_stream_projects_complete() -> None:
    data = spec_example_stream()
    doc = document(data, "example.jsonl")
    assert doc["run"] == "b10x-48213"
    assert len(doc["nodes"]) == 15
    assert [n["family"] for n in doc["nodes"]] == [
        "unk", "unk", "session_start", "unk", "unk", "run_outcome", "tool_call", "unk", "tool_result", "unk",
        "assistant_text", "assistant_text", "run_outcome", "run_outcome", "stream_closed",
    ]
    assert doc["metaharness"]["stream_complete"] == "complete"
    assert doc["metaharness"]["withheld"] == [{"tool": "run", "reason": "no program was allowed; pass --allow-program"}]
    assert doc["metaharness"]["vendor_transcript"] == {"path": "/scratch/run/loop.jsonl", "digest": None, "bytes": None}


def test_project_from_b10x_maps_a_real_loop_record(tmp_path: Path) -> None:
    """A record the real b10x-harness wrote against the real emulator, projected as replay maps it."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello harness\n")
    harness = str(Path(sys.executable).with_name("b10x-harness"))
    with running_emulator("--scenario", "flat-tool") as (base_url, _process):
        done = subprocess.run(
            [harness, "run", "--json", "--no-session", "--workspace", str(workspace), "--base-url", base_url,
             "--model", "b10x-emulated", "--input", "read the readme"],
            capture_output=True, check=False, timeout=60,
        )
    assert done.returncode == 0, done.stderr
    (tmp_path / "loop.jsonl").write_bytes(done.stdout)
    result = metaharness("loop.jsonl", "--from", "b10x", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["run"] == "replay"
    assert doc["transcript_digest"] == hashlib.sha256(done.stdout).hexdigest()
    assert doc["metaharness"]["source"] == "b10x-harness.record"
    assert doc["metaharness"]["vendor_transcript"] == {"path": "loop.jsonl", "digest": None, "bytes": None}
    assert doc["metaharness"]["stream_complete"] == "complete"
    calls = [n for n in doc["nodes"] if n["family"] == "tool_call"]
    assert [(c["data"]["name"], c["call_id"]) for c in calls] == [("file_read", calls[0]["call_id"])]
    assert calls[0]["data"]["input"] == {"path": "README.md"}


def test_project_verb_never_writes_through_a_link_or_into_a_fifo_at_its_out_or_html(tmp_path: Path) -> None:
    """Hostile: a child planted, where the operator later has ``project`` write, a link to a file of the
    operator's and a FIFO. Each is ``projection-unwritable``, without blocking, and the linked file keeps its
    bytes; a regular file there is still replaced."""
    (tmp_path / "a.jsonl").write_bytes(stream("b10x-1", RUN_A))
    profile = tmp_path / "profile"
    profile.write_text("the operator's\n")
    (tmp_path / "doc.json").symlink_to(profile)
    os.mkfifo(tmp_path / "page.html")
    linked = metaharness("a.jsonl", "--out", "doc.json", cwd=tmp_path)
    assert linked.returncode == 2 and b"projection-unwritable" in linked.stderr and b"symbolic link" in linked.stderr
    fifo = metaharness("a.jsonl", "--html", "page.html", cwd=tmp_path)
    assert fifo.returncode == 2 and b"projection-unwritable" in fifo.stderr and b"not a regular file" in fifo.stderr
    assert profile.read_text() == "the operator's\n"
    (tmp_path / "kept.json").write_text("an older document, longer than the new one would be " * 400)
    assert metaharness("a.jsonl", "--out", "kept.json", cwd=tmp_path).returncode == 0
    assert (tmp_path / "kept.json").read_bytes() == document_text(project_stream("a.jsonl", stream("b10x-1", RUN_A)).unwrap()).encode()


def test_project_verb_writes_to_the_operators_own_streams_named_in_dev(tmp_path: Path) -> None:
    """``/dev/stdout`` (a link into ``/proc``) and ``/dev/null`` (a device) are the operator's own streams in the
    system's directory: ``--out`` writes them as named; a link to the same stream elsewhere is still refused."""
    (tmp_path / "a.jsonl").write_bytes(stream("b10x-1", RUN_A))
    expected = document_text(project_stream("a.jsonl", stream("b10x-1", RUN_A)).unwrap()).encode()
    to_stdout = metaharness("a.jsonl", "--out", "/dev/stdout", cwd=tmp_path)
    assert to_stdout.returncode == 0 and to_stdout.stdout == expected
    assert metaharness("a.jsonl", "--out", "/dev/null", cwd=tmp_path).returncode == 0
    (tmp_path / "out.json").symlink_to("/dev/stdout")
    planted = metaharness("a.jsonl", "--out", "out.json", cwd=tmp_path)
    assert planted.returncode == 2 and b"symbolic link" in planted.stderr and planted.stdout == b""
