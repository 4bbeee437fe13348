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


PLANT_FIFO_AT_THE_MANIFEST = (
    "import os\n"
    "if '--help' in sys.argv:\n"
    "    print('  --plugin-dir DIR')\n"
    "    sys.exit(0)\n"
    "copy = sys.argv[sys.argv.index('--plugin-dir') + 1]\n"
    "manifest = os.path.join(copy, '.claude-plugin', 'plugin.json')\n"
    "os.unlink(manifest)\n"
    "os.mkfifo(manifest)\n"
)


def test_a_fifo_planted_at_the_plugin_copys_manifest_does_not_hang_the_wind_up(tmp_path: Path) -> None:
    """Under ``--confine off`` the loop can reach its plugin copy: a FIFO there made the wind-up's H1a
    read (``open`` by name) wait for a writer forever; the copy is read through its descriptor now, a
    FIFO is no manifest, and the run ends with its report."""
    home, work = tmp_path / "home", tmp_path / "ws"
    work.mkdir()
    source = tmp_path / "plugins" / "guide"
    (source / ".claude-plugin").mkdir(parents=True)
    (source / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "guide"}))
    stand_in(home, "b10x-harness", PLANT_FIFO_AT_THE_MANIFEST + records_body([*OPENING, FINISHED]))
    argv = ["-p", "go", "--model", "m", "--model-endpoint", CLOSING_ENDPOINT, "--cwd", str(work),
            "--confine", "off", "--decisions", "observe", "--audit", "--plugin-dir", str(source)]  # fmt: skip
    done = run(home, argv, timeout=60)
    stream(done)
    report = done.stderr.decode()
    assert "control verdict: " in report and "Traceback" not in report, report
    assert any(line.startswith("  H1a  ") for line in report.splitlines()), report
