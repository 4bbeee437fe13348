"""The run page of ``project --html`` as a pure function (docs/view.md): self-contained, escaped,
byte-stable; calls as the spine, two runs aligned by call with a marker where they differ."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from metaharness.pure.projection import project_stream
from metaharness.pure.run_page import audited_lines, run_page

HERMETIC = {
    "mode": "strict", "decisions": "frame",
    "imposed": [{"row": "H3", "how": "environment constructed: PATH"}, {"row": "H13", "how": "own network namespace; no route"}],
    "declared": [{"row": "H7", "how": "declared <cwd>"}],
    "unavailable": [{"row": "H9", "why": "the version is read from the probe"}],
    "ambient_inputs": [], "installed_plugins": [],
}  # fmt: skip


def started(run: str, adapter: str) -> dict[str, Any]:
    return {
        "event": "session.started", "adapter": adapter, "adapter_class": "harness", "harness_version": "1.0",
        "session_id": None, "model": "m", "permission_mode": None, "credential_source": None, "output_style": None,
        "cwd": "/w", "offered_tools": None, "withheld": [], "slash_commands": None, "skills": None, "agents": None,
        "plugins": None, "mcp_servers": None, "inputs_digest": None,
        "transcript": {"path": None, "digest": None, "bytes": None}, "hermetic": HERMETIC,
    }  # fmt: skip


def call(call_id: str, name: str, decision: dict[str, Any], by: str = "frame", **input_: Any) -> list[dict[str, Any]]:
    return [
        {"event": "tool.requested", "call_id": call_id, "name": name, "input": input_, "decision_required": False,
         "deadline_ms": None, "seam": "hook"},
        {"event": "tool.decided", "call_id": call_id, "decision": decision, "decided_by": by, "seam": "hook",
         "latency_ms": 3 if by == "embedder" else None},
        {"event": "tool.result", "exit_code": None, "outcome_source": None, "call_id": call_id,
         "is_error": decision["decision"] == "deny", "content": None, "bytes": 12, "tool_use_result": None},
    ]  # fmt: skip


def stream(run: str, payloads: list[dict[str, Any]]) -> bytes:
    lines = [{"format": "metaharness.event/1", "seq": seq, "run": run, **p} for seq, p in enumerate(payloads, 1)]
    lines.append({"format": "metaharness.event/1", "seq": len(lines) + 1, "run": run, "event": "stream.closed",
                  "events": len(lines), "reason": "completed", "run_id": run, "process": {"kind": "exited", "code": 0}})
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


DENY = {"decision": "deny", "reason": "note.md is <not> yours"}
RUN_A = [
    started("a", "claude"),
    {"event": "text", "text": "I will <read> ", "request_id": None},
    {"event": "text", "text": "then write", "request_id": None},
    *call("t1", "Read", {"decision": "allow"}, path="a.md"),
    *call("t2", "Write", DENY, path="note.md", text="x" * 400),
]
RUN_B = [
    {"event": "warning", "code": "VERSION_OFF_PIN", "message": "off pin"},
    started("b", "b10x"),
    {"event": "warning", "code": "COVERAGE_GAP", "message": "reads run unasked"},
    {"event": "thinking", "text": "hmm", "request_id": None},
    *call("c1", "file_read", {"decision": "allow"}, path="a.md"),
    *call("c2", "file_write", {"decision": "allow"}, by="embedder", path="note.md"),
    *call("c3", "file_read", {"decision": "allow"}, path="note.md"),
]


def page(*runs: tuple[str, list[dict[str, Any]]], audits: tuple[tuple[str, ...], ...] = ()) -> str:
    return run_page([project_stream(f"{run}.jsonl", stream(run, payloads)).unwrap() for run, payloads in runs], audits)


def rows(text: str) -> list[tuple[str, str]]:
    return re.findall(r'<tr class="([^"]*)"[^>]*>(.*?)</tr>\n', text, flags=re.DOTALL)


def test_two_runs_are_aligned_by_call_and_marked_where_they_differ() -> None:
    text = page(("a", RUN_A), ("b", RUN_B))
    assert text == page(("a", RUN_A), ("b", RUN_B))
    body = text.split('<table class="calls">', 1)[1]
    found = rows(body)
    assert [classes for classes, _ in found] == ["between", "call differs", "call differs", "call differs"]
    first, second, third = (cells for _, cells in found[1:])
    assert '<td class="k">call 1 <span class="marker">≠ tool</span></td>' in first
    assert "<span class=\"name\">Read</span>" in first and "<span class=\"name\">file_read</span>" in first
    assert '<span class="marker">≠ tool ≠ decision</span>' in second
    assert '<div class="why">note.md is &lt;not&gt; yours</div>' in second
    assert 'by <span class="by">embedder</span> on hook, <span class="latency">3ms</span>' in second
    assert '<span class="marker">≠ absent</span>' in third and third.count('<td class="call"></td>') == 1
    notes = found[0][1]
    assert '<div class="note n-text">I will &lt;read&gt; then write</div>' in notes
    assert '<span class="label">VERSION_OFF_PIN</span>off pin' in notes and "n-thinking" in notes


def test_a_long_input_is_cut_with_the_full_text_in_details() -> None:
    text = page(("a", RUN_A))
    assert text.count("<details>") == 1
    short, full = re.search(r'<code class="input">([^<]*)</code><details><summary>full input</summary>'
                            r'<pre class="full">([^<]*)</pre></details>', text).groups()  # type: ignore[union-attr]
    assert len(html.unescape(short)) == 160 and short.endswith("…")
    assert json.loads(html.unescape(full)) == {"path": "note.md", "text": "x" * 400}
    assert "<script" not in text and not re.search(r"(src|href)\s*=", text)


def test_the_summary_and_the_hermetic_rows_by_id() -> None:
    text = page(("b", RUN_B), audits=(audited_lines("H3 …\nchild exit: 0\ncontrol verdict: gap\naudit verdict: gap (exit 1)\n"),))
    summary = dict(re.findall(r"<dt>([^<]*)</dt><dd>([^<]*)</dd>", text))
    assert summary["kind"] == "b10x" and summary["decisions"] == "frame" and summary["frame"] == "none in force"
    assert summary["stream"] == "complete — 13 event(s) before the marker, reason completed"
    assert summary["exit"] == "0 (as an unaudited run)" and summary["child exit"] == "0"
    assert '<pre class="audited">child exit: 0\ncontrol verdict: gap\naudit verdict: gap (exit 1)</pre>' in text
    assert "decision census: allowed=3 denied=0 replaced=0 abstained=0" in text
    hermetic = re.findall(r'<tr class="v-(\w+)"><td class="row">(\w+)</td><td class="verdict">\w+</td>'
                          r'<td class="state">(\w+)</td>', text)
    assert hermetic == [("ok", "H3", "imposed"), ("unk", "H7", "declared"), ("gap", "H9", "unavailable"),
                        ("ok", "H13", "imposed")]
