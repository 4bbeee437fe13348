"""``metaharness run b10x`` against stand-in loops that write hostile records (real processes): a path
through an in-tree link is judged where it lands, and a question under another name than the
announcement is denied with a warning."""

from __future__ import annotations

import json
from pathlib import Path

from closing_endpoint import CLOSING_ENDPOINT
from governed_b10x import run, stream
from stand_in import ANSWER, records_body, stand_in

from metaharness.pure.frames import frame_document, seal_frame

READS = [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}]
SRC_WRITES = {
    "workflow": {"id": "w", "version": "1"},
    "node": {"id": "n"},
    "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0},
    "prior": [],
    "obligations": [],
    "reaching": [],
    "next": [],
    "handoff": {"handoff": "none"},
    "operations": [*READS, {"op": "file.write"}],
    "subjects": [
        {"subject": "file:src/**", "operations": [*READS, {"op": "file.write"}]},
        {"subject": "file:**", "operations": READS},
    ],
}
OPENING = [b'{"kind":"started","model":"m","workspace":"."}', b'{"kind":"turn-started","turn":1}']
FINISHED = b'{"kind":"finished","stop":"end_turn","turns":1}'


def record(kind: str, **fields: object) -> bytes:
    return json.dumps({"kind": kind, **fields}).encode()


def governed(tmp_path: Path, lines: list[bytes], *options: str) -> tuple[list[dict], Path]:
    home, work = tmp_path / "home", tmp_path / "ws"
    (work / "src").mkdir(parents=True)
    (work / "src" / "up").symlink_to("..")
    stand_in(home, "b10x-harness", records_body(lines))
    frame = tmp_path / "frame.json"
    frame.write_bytes(frame_document(seal_frame(SRC_WRITES).unwrap()))
    argv = ["-p", "go", "--model", "m", "--model-endpoint", CLOSING_ENDPOINT, "--cwd", str(work)]
    done = run(home, [*argv, "--decisions", "frame", "--frame", str(frame), *options])
    return stream(done), work


def decided(events: list[dict], call_id: str) -> dict:
    return next(e for e in events if e["event"] == "tool.decided" and e["call_id"] == call_id)


def test_a_write_through_an_in_tree_link_is_judged_where_it_lands(tmp_path: Path) -> None:
    call = record("tool-requested", call_id="c1", name="file_write", arguments={"path": "src/up/note.md", "text": "x"})
    events, _ = governed(tmp_path, [*OPENING, call, record("approval-required", call_id="c1", name="file_write"),
                                    ANSWER, FINISHED])  # fmt: skip
    requested = next(e for e in events if e["event"] == "tool.requested")
    assert requested["subjects"] == ["file:note.md"] and requested["input"]["path"] == "src/up/note.md"
    verdict = decided(events, "c1")
    assert verdict["decision"]["decision"] == "deny" and verdict["decided_by"] == "frame"
    assert verdict["decision"]["reason"].startswith("file:note.md falls under the subject rule file:**")


def test_a_question_under_another_name_is_denied_and_warned(tmp_path: Path) -> None:
    call = record("tool-requested", call_id="c1", name="file_read", arguments={"path": "src/a.md"})
    events, _ = governed(tmp_path, [*OPENING, call, record("approval-required", call_id="c1", name="file_write"),
                                    ANSWER, FINISHED])  # fmt: skip
    warning = next(e for e in events if e["event"] == "warning" and e["code"] == "approval-name-mismatch")
    assert warning["message"] == "the loop announced c1 as file_read and asks approval for it as file_write"
    verdict = decided(events, "c1")
    assert verdict["decision"]["decision"] == "deny" and verdict["decided_by"] == "adapter"
