"""Who refused a call, in the view and on the page (docs/view.md): the pinned Claude Code, run in frame
mode with no frame, is refused a Write by its own permission mode; metaharness abstained, and the
answer is in the terminal record's ``permission_denials``. The view and the page name Claude's
permission layer as the refuser, fold the vendor's unread records into one line per kind, and the
side-by-side page against a b10x run whose frame denied the same write marks no ``≠ decision``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from governed_b10x import LOOP, common, workspace
from helpers.emulator import running_emulator
from vendor_cli import PINS, pinned_cli

from metaharness.pure.events import EventLine, Opaque
from metaharness.pure.run_view import closing_lines, fold_lines, plain_lines

VENV_BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent
DENIED = "refused: Write toolu_b10x_001 by claude's own permission layer (permission_denials)"


def claude_stream(tmp_path: Path) -> Path:
    events = tmp_path / "claude.jsonl"
    work = tmp_path / "claude-work"
    work.mkdir()
    with running_emulator("--scenario", "claude-write") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "claude", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "--cwd", str(work), "--events", str(events),
                "-p", "write the note"]  # fmt: skip
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert not (work / "note.md").exists()
    return events


def b10x_stream(tmp_path: Path) -> Path:
    home, events = tmp_path / "home", tmp_path / "b10x.jsonl"
    (home / ".local" / "bin").mkdir(parents=True, exist_ok=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    with running_emulator("--scenario", "flat-write") as (base_url, _):
        argv = [str(VENV_BIN / "metaharness"), "run", "b10x", "--frame", str(ROOT / "examples" / "step.frame.json"),
                "--events", str(events), *common(base_url, workspace(tmp_path))]  # fmt: skip
        done = subprocess.run(argv, env={"HOME": str(home), "PATH": os.environ["PATH"]}, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    return events


@pytest.mark.skipif(pinned_cli("claude") is None, reason=f"the pinned Claude Code {PINS['claude']} is not installed")
@pytest.mark.usefixtures("own_home")
def test_a_vendor_refused_call_names_the_vendor_in_view_and_page(tmp_path: Path) -> None:
    claude, b10x = claude_stream(tmp_path), b10x_stream(tmp_path)
    viewed = subprocess.run([str(VENV_BIN / "metaharness-view"), str(claude)], capture_output=True, timeout=60, check=False)
    shown = viewed.stdout.decode()
    assert viewed.returncode == 0 and DENIED in shown, shown
    assert "abstain by adapter" in shown, "metaharness's own decision is still shown as it was"
    assert "records not read (opaque): system/permission_denied ×1" in shown

    page = tmp_path / "page.html"
    projected = subprocess.run([str(VENV_BIN / "metaharness"), "project", str(claude), str(b10x), "--html", str(page)],
                               capture_output=True, timeout=60, check=False)  # fmt: skip
    assert projected.returncode == 0, projected.stderr.decode()
    html = page.read_text(encoding="utf-8")
    assert "refused by claude&#x27;s own permission layer (permission_denials)" in html
    assert "refused by metaharness (frame)" in html
    first = re.search(r'<tr class="([^"]*)" id="call-1"><td class="k">call 1 (?:<span class="marker">([^<]*)</span>)?', html)
    assert first is not None and first.group(2) == "≠ tool", "the same refusal is no ≠ decision; the tool names differ"


def test_opaque_records_of_one_kind_fold_into_one_line() -> None:
    """Thirteen bookkeeping records of one kind are one timeline note counting them, printed once."""
    lines = [EventLine(seq=n, run="r", payload=Opaque(vendor_type="event_msg", vendor_subtype="token_count",
                                                       digest="0" * 64, source_line=n)) for n in range(1, 14)]  # fmt: skip
    lines.append(EventLine(seq=14, run="r", payload=Opaque(vendor_type="response_item", vendor_subtype=None,
                                                           digest="0" * 64, source_line=14)))  # fmt: skip
    state = fold_lines(lines)
    notes = [entry for entry in state.timeline.values()]
    assert [getattr(note, "text", "") for note in notes] == [
        "event_msg/token_count ×13, the first at line 1", "response_item/None at line 14"]
    printed = []
    before = fold_lines([])
    for line in lines:
        after = fold_lines(lines[: line.seq])
        printed += plain_lines(before, after, line)
        before = after
    assert printed == ["record opaque: event_msg/token_count at line 1", "record opaque: response_item/None at line 14"]
    assert "records not read (opaque): event_msg/token_count ×13, response_item/None ×1" in closing_lines(state)
