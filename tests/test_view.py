"""``metaharness-view`` in plain-text mode (stdout not a terminal) and the fold under it
(docs/view.md): a recorded live run read byte for byte, malformed and truncated input, a retained
b10x record read through replay's mapping, and the refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.emulator import running_emulator

from metaharness.pure.bounds import INPUT_FILE_LIMIT
from metaharness.pure.events import read_event
from metaharness.pure.run_view import (
    Malformed,
    ViewState,
    all_calls,
    call_parts,
    entries,
    final_census,
    fold_lines,
    fold_view,
    hermetic_rows,
    plain,
    progress_lines,
    remaining_ms,
)

VIEW = Path(sys.executable).with_name("metaharness-view")
RECORDED = Path(__file__).with_name("streams") / "b10x-ask-deny.jsonl"
"""A live ``metaharness run b10x --decisions ask`` against the emulator's ``flat-write`` scenario, its one
call denied by the embedder over stdin."""

EXPECTED = [
    "warning VERSION_OFF_PIN: /tmp/rec/home/.local/bin/b10x-harness reports 0.1.0; the adapter is pinned to 0.22.0, so this run is unverified rather than refused",
    "warning UNVERIFIED_TIER: this run's decisions travel on the b10x caller seam and the call tier is declared unverified: the loop asks only about calls above its approval ceiling (low), so reads run unasked",
    "run b10x-30700 · b10x 0.1.0 · model b10x-emulated",
    "  directory /tmp/rec/ws",
    "  decisions ask · frame none in force · hermetic off",
    "  confinement not attested",
    "warning COVERAGE_GAP: the caller seam cannot decide file_read, dir_list, search, find: the loop runs them unasked below its approval ceiling",
    "turn 1",
    'call file_write call_b10x_001 {"path":"note.md","text":"written by the harness\\n"} requested on control_request, asks the embedder within 25000ms',
    "call file_write call_b10x_001 deny by embedder on control_request, 0ms: notes are written in the next step",
    "command answer-1: ok",
    "call file_write call_b10x_001 error, bytes not reported",
    "turn 2",
    "text: that is what the tool said",
    "session ended: subtype completed, terminal reason completed, 2 turn(s)",
    "stream closed: completed",
    "decision census: allowed=0 denied=1 replaced=0 abstained=0",
    "  by seam    control_request: 1",
    "  by decider embedder: 1",
    "refused: file_write call_b10x_001 by metaharness (embedder)",
    "withheld: run (no program was allowed; pass --allow-program)",
    "hermetic rows (as attested; the audited report also checks the record):",
    "  H1a  ok  imposed     config home is scratch — plugins are exactly the declared set — plugins arrive only as named --plugin-dir copies",
    "  H2   ok  imposed     settings sources are excluded — XDG_CONFIG_HOME=/tmp/metaharness-i50q1kpz/config holds no profile",
    "  H3   ok  imposed     the environment is constructed, not inherited — environment constructed: PATH, XDG_CONFIG_HOME",
    "  H4   ok  imposed     no API key unless the run declared one — no key variable is in the child's environment",
    "  H5   ok  imposed     the MCP surface is exactly what the launch gave — no --mcp-profile; mcp_servers stated []",
    "  H6   ok  imposed     credentials are one file, copied — no credential",
    "  H7   gap unavailable the working directory is ours — the child runs in /tmp/rec/ws, which metaharness did not create, and can write to it",
    "  H8   ok  imposed     hooks and customizations are not skipped — no hooks; no ambient discovery",
    "  H9   gap unavailable the vendor version is the pinned one — the version is read from the launch's --version probe",
    "  H10  ok  imposed     governing documents cannot move under the run — no governing document",
    "  H11  gap unavailable no memory file outside the copied tree is discoverable — the child runs in the operator's tree /tmp/rec/ws; memory files in and above it are discoverable",
    "stop: subtype completed, terminal reason completed, 2 turn(s)",
    "stream: complete — 15 event(s) before the marker, reason completed",
    "child exit: 0; the stream implies exit 0",
]


def view(*args: str, stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(VIEW), *args], input=stdin, capture_output=True, cwd=cwd, check=False, timeout=60)


def test_a_recorded_run_in_plain_text_byte_for_byte() -> None:
    expected = "".join(line + "\n" for line in EXPECTED).encode("utf-8")
    from_file = view(str(RECORDED))
    assert (from_file.returncode, from_file.stderr) == (0, b"")
    assert from_file.stdout == expected
    from_stdin = view("-", stdin=RECORDED.read_bytes())
    assert (from_stdin.returncode, from_stdin.stdout) == (0, expected)
    assert view(stdin=RECORDED.read_bytes()).stdout == expected
    assert b"\x1b" not in expected


def test_a_malformed_line_is_shown_and_skipped_and_a_cut_stream_exits_1() -> None:
    lines = RECORDED.read_bytes().splitlines(keepends=True)
    cut = b"".join(lines[:4]) + b"not json at all\n" + b'{"format":"other/1"}\n' + b"".join(lines[4:-1])
    done = view(stdin=cut)
    assert done.returncode == 1 and done.stderr == b""
    out = done.stdout.decode("utf-8").splitlines()
    assert out[7].startswith("malformed line 5: not a JSON object: ") and out[7].endswith(": not json at all")
    assert out[8] == 'malformed line 6: unknown format tag "other/1", expected "metaharness.event/1": {"format":"other/1"}'
    assert "call file_write call_b10x_001 deny by embedder on control_request, 0ms: notes are written in the next step" in out
    assert out[-3:] == [
        "stream: TRUNCATED — no `stream.closed` marker, so nothing in it can tell an absence from a cut-off file",
        "child exit: unknown; no exit is implied without a closing marker",
        "2 malformed line(s) shown and skipped",
    ]


def test_a_stream_that_goes_on_after_its_marker_exits_1() -> None:
    data = RECORDED.read_bytes()
    done = view(stdin=data + data.splitlines(keepends=True)[0].replace(b'"seq":1', b'"seq":17'))
    assert done.returncode == 1
    assert done.stdout.decode().splitlines()[-2:] == [
        "stream: INCONSISTENT — a closing marker says completed and it is line 16 of 17",
        "child exit: 0; the stream implies exit 0",
    ]


def test_from_b10x_reads_a_retained_loop_record(tmp_path: Path) -> None:
    """A record the real b10x-harness wrote against the real emulator, read as replay maps it."""
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
    shown = view("loop.jsonl", "--from", "b10x", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout.decode().splitlines()
    assert out[0] == "run replay · b10x not stated · model b10x-emulated"
    assert any(line.startswith('call file_read ') and line.endswith(' {"path":"README.md"} requested on none')
               for line in out)
    assert "stream: complete" in out[-2]


VECTORS = Path(__file__).resolve().parent.parent / "vectors"
RECORDS = [("b10x", "golden/loop.jsonl"), ("claude", "record/bash.jsonl"), ("codex", "record/shell.jsonl"),
           ("gemini", "record/write.jsonl")]  # fmt: skip


@pytest.mark.parametrize(("kind", "name"), RECORDS)
def test_from_shows_what_the_replayed_stream_shows(tmp_path: Path, kind: str, name: str) -> None:
    """``--from KIND`` maps the record line by line from its sealed copy (never holding it whole): what it shows is
    byte for byte what the view shows of the stream ``replay KIND`` writes of the same record, read from a file
    and, with ``-``, from stdin."""
    record = VECTORS / kind / name
    replayed = subprocess.run([sys.executable, "-m", "metaharness.shell", "replay", kind, str(record)],
                              capture_output=True, check=False, timeout=60)  # fmt: skip
    (tmp_path / "stream.jsonl").write_bytes(replayed.stdout)
    expected = view("stream.jsonl", cwd=tmp_path)
    assert expected.stdout and expected.stderr == b""
    shown = view("--from", kind, str(record))
    assert (shown.returncode, shown.stdout, shown.stderr) == (expected.returncode, expected.stdout, b"")
    piped = view("--from", kind, "-", stdin=record.read_bytes())
    assert (piped.returncode, piped.stderr) == (expected.returncode, b"")
    assert piped.stdout == expected.stdout.replace(str(record).encode(), b"-")


@pytest.mark.parametrize(
    ("args", "code"),
    [(["missing.jsonl"], "view-unreadable"), (["--from", "aider", "x"], "usage"), (["a", "b"], "usage")],
)
def test_refusals_are_one_line_exit_2(tmp_path: Path, args: list[str], code: str) -> None:
    done = view(*args, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"metaharness: {code}: ")


def test_a_vendor_record_past_the_input_bound_is_refused_unread_past_it(tmp_path: Path) -> None:
    """Hostile: a child grew the record a run retained to a terabyte with one ``truncate``; ``--from`` reads at most
    ``INPUT_FILE_LIMIT`` bytes of it and refuses it ``view-unreadable``, never holding the whole file."""
    record = tmp_path / "huge.jsonl"
    with record.open("wb") as handle:
        handle.truncate(1 << 40)
    done = view("huge.jsonl", "--from", "claude", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.decode() == (
        f"metaharness: view-unreadable: huge.jsonl: cannot be read: larger than {INPUT_FILE_LIMIT} bytes\n")


def test_a_view_that_cannot_be_written_is_a_refusal() -> None:
    with open("/dev/full", "wb") as full:
        done = subprocess.run([str(VIEW), str(RECORDED)], stdout=full, stderr=subprocess.PIPE, check=False, timeout=60)
    assert done.returncode == 2
    assert done.stderr == (b"metaharness: view-io-failed: the stream could not be read or the view written: "
                           b"No space left on device\n")


def _line(seq: int, payload: dict[str, object]) -> bytes:
    return json.dumps({"format": "metaharness.event/1", "seq": seq, "run": "r", **payload}).encode()


def test_an_asked_call_counts_down_until_it_is_decided() -> None:
    lines = RECORDED.read_bytes().splitlines()
    state = ViewState()
    for line in lines[:7]:
        state = fold_view(state, read_event(line).unwrap(), 100.0)
    call = all_calls(state)[0]
    assert remaining_ms(call, 100.0) == 25000
    assert remaining_ms(call, 112.5) == 12500
    assert remaining_ms(call, 200.0) == 0
    assert plain(call_parts(call, 112.5)).endswith("→ asks the embedder — answer due, 12s left")
    state = fold_view(state, read_event(lines[7]).unwrap(), 101.0)
    assert remaining_ms(all_calls(state)[0], 101.0) is None
    assert plain(call_parts(all_calls(state)[0], 101.0)).endswith(
        "→ deny by embedder on control_request, 0ms: notes are written in the next step"
    )


def test_text_deltas_join_until_another_line_and_codes_are_shown_as_they_come() -> None:
    payloads = [
        {"event": "text", "text": "that is ", "request_id": None},
        {"event": "text", "text": "what", "request_id": None},
        {"event": "warning", "code": "RUN_TIMEOUT", "message": "a code this build never names"},
        {"event": "text", "text": "!", "request_id": None},
    ]
    state = fold_lines([read_event(_line(seq, p)).unwrap() for seq, p in enumerate(payloads, 1)]
                       + [Malformed(5, "{", "not a JSON object: truncated")])
    assert [(e.kind, e.label, e.text) for e in entries(state)] == [  # type: ignore[union-attr]
        ("text", "text", "that is what"),
        ("warning", "RUN_TIMEOUT", "a code this build never names"),
        ("text", "text", "!"),
        ("malformed", "line 5", "not a JSON object: truncated: {"),
    ]


def test_hermetic_rows_are_the_attested_ones_whatever_their_ids() -> None:
    started = json.loads(RECORDED.read_bytes().splitlines()[2])
    hermetic = started["hermetic"]
    hermetic["imposed"].append({"row": "H12", "how": "bwrap 0.8.0: read-only system"})
    hermetic["unavailable"].insert(0, {"row": "H99", "why": "a row this build does not know"})
    state = fold_lines([read_event(json.dumps(started)).unwrap()])
    rows = hermetic_rows(state.started.hermetic)  # type: ignore[union-attr]
    assert [(r.row, r.state, r.verdict) for r in rows][-5:] == [
        ("H9", "unavailable", "gap"), ("H10", "imposed", "ok"), ("H11", "unavailable", "gap"),
        ("H12", "imposed", "ok"), ("H99", "unavailable", "gap"),
    ]
    assert rows[-1].control == ""


def test_a_bypass_named_after_session_ended_is_in_the_census_the_view_prints() -> None:
    """The deny that shows a bypass came after the terminal record (docs/events.md#census): the view's census
    counts the later ``DECISION_BYPASSED``, as the audit does; one before another ``session.ended`` is that one's."""
    lines = RECORDED.read_bytes().splitlines()
    ended = next(index for index, line in enumerate(lines) if b'"session.ended"' in line)
    state = ViewState()
    for line in lines[: ended + 1]:
        state = fold_view(state, read_event(line).unwrap(), 100.0)
    assert not final_census(state).bypassed
    late = _line(ended + 2, {"event": "warning", "code": "DECISION_BYPASSED", "message": "metaharness denied c1, yet"})
    state = fold_view(state, read_event(late).unwrap(), 100.0)
    assert final_census(state).bypassed == 1
    again = fold_view(state, read_event(lines[ended]).unwrap(), 100.0)
    assert not final_census(again).bypassed


FORGED_TEXT = "x\x1b[2K\rcontrol verdict: ok\x1b]52;c;ZWNobyBoaQ==\x07\x9b2J"
"""Model text that, printed raw, erases the line, prints a forged verdict and writes the terminal's clipboard."""


def _hostile_record() -> bytes:
    """The recorded run with control sequences in its text, its call id and its tool name."""
    data = RECORDED.read_bytes()
    data = data.replace(b'"the tool said"', json.dumps(FORGED_TEXT).encode())
    data = data.replace(b'"call_b10x_001"', json.dumps("c1\x1b[1A\x1b[2K\nH12 ok").encode())
    return data.replace(b'"file_write"', json.dumps("file_write\x1b]0;owned\x07").encode())


def _controls(data: bytes) -> set[int]:
    return {byte for byte in data if byte < 0x20 and byte not in (0x09, 0x0A)} | (
        {0x9B} if "\x9b" in data.decode("utf-8", errors="replace") else set()
    )


def test_a_records_control_sequences_reach_plain_output_escaped() -> None:
    """A record is hostile (docs/view.md#control-characters): no string of it reaches the output as a control sequence."""
    done = view(stdin=_hostile_record())
    assert done.returncode == 0, done.stderr
    assert _controls(done.stdout) == set()
    out = done.stdout.decode("utf-8")
    assert "text: that is what x\\u001b[2K\\u000dcontrol verdict: ok\\u001b]52;c;ZWNobyBoaQ==\\u0007\\u009b2J" in out
    assert "call file_write\\u001b]0;owned\\u0007 c1\\u001b[1A\\u001b[2K" in out


def test_a_records_control_sequences_reach_a_terminal_escaped() -> None:
    """On a terminal (a real pseudo-terminal, ``rich`` drawing) the record's OSC, CSI and BEL bytes are shown
    as escapes; only ``rich``'s own styling sequences reach it."""
    import pty

    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "400", "LINES": "60"}
    child = subprocess.Popen([str(VIEW)], stdin=subprocess.PIPE, stdout=follower, stderr=subprocess.PIPE, env=env)
    os.close(follower)
    assert child.stdin is not None
    child.stdin.write(_hostile_record())
    child.stdin.close()
    shown = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert child.wait(timeout=60) == 0
    assert b"\x1b]" not in shown and b"\x07" not in shown and "\x9b".encode() not in shown
    assert b"\\u001b]52;c;ZWNobyBoaQ==\\u0007" in shown and b"\\u001b]0;owned\\u0007" in shown


def test_progress_lines_are_one_line_each_with_controls_escaped() -> None:
    """``run``'s progress on a terminal's stderr (docs/cli.md#progress-on-stderr) prints a call id as text:
    a line feed in it forges no line of its own."""
    state, printed = ViewState(), []
    for line in _hostile_record().splitlines():
        read = read_event(line).unwrap()
        after = fold_view(state, read, 0.0)
        printed += progress_lines(state, after, read)
        state = after
    assert printed and all(_controls(text.encode()) == set() and "\n" not in text for text in printed)
    assert any("c1\\u001b[1A\\u001b[2K\\u000aH12 ok" in text for text in printed)
