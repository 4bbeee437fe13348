"""The view and the run page show each hermetic row's verdict as the run's audit computes it (the record
checked against the launch, ``session.ended.rows``), not the attestation's state alone
(docs/view.md): the pinned Claude Code's clean run, against ``b10x-emulator``, shows no
H9 gap in either, and every row agrees with the audited report the same run wrote on stderr."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.emulator import running_emulator
from vendor_cli import PINS, pinned_cli

VENV_BIN = Path(sys.executable).parent
REPORT_ROW = re.compile(r"^  (H\w+)\s+(ok|gap|unk)\s", re.MULTILINE)

pytestmark = [
    pytest.mark.skipif(pinned_cli("claude") is None, reason=f"the pinned Claude Code {PINS['claude']} is not installed"),
    pytest.mark.usefixtures("own_home"),
]


def test_the_pinned_claude_run_shows_no_version_gap_in_view_or_page(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    events, page = tmp_path / "ev.jsonl", tmp_path / "page.html"
    with running_emulator("--scenario", "claude-write") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "claude", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "--cwd", str(work), "--decisions", "observe",
                "--hermetic", "on", "--events", str(events), "-p", "write the note"]  # fmt: skip
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=180, check=False)
    stderr = done.stderr.decode()
    reported = dict(REPORT_ROW.findall(stderr))
    assert reported["H9"] == "ok", stderr
    ended = next(json.loads(line) for line in events.read_bytes().splitlines() if b'"session.ended"' in line)
    assert {row["row"]: row["verdict"] for row in ended["rows"]} == reported
    attested = next(json.loads(line) for line in events.read_bytes().splitlines() if b'"session.started"' in line)
    assert "H9" in {why["row"] for why in attested["hermetic"]["unavailable"]}, "H9 is attested unavailable"

    viewed = subprocess.run([str(VENV_BIN / "metaharness-view"), str(events)], capture_output=True, timeout=60, check=False)
    shown = viewed.stdout.decode()
    assert viewed.returncode == 0 and "hermetic rows (as the run checked them against the record):" in shown
    h9 = next(line for line in shown.splitlines() if line.startswith("  H9 "))
    assert h9.split()[1:3] == ["ok", "unavailable"] and f"harness_version {PINS['claude']} is pinned" in h9
    for row, verdict in reported.items():
        assert next(line for line in shown.splitlines() if line.startswith(f"  {row} ")).split()[1] == verdict

    projected = subprocess.run([str(VENV_BIN / "metaharness"), "project", str(events), "--out", str(tmp_path / "t.json"),
                                "--html", str(page)], capture_output=True, timeout=60, check=False)  # fmt: skip
    assert projected.returncode == 0, projected.stderr.decode()
    html = page.read_text(encoding="utf-8")
    assert "hermetic rows, as the run checked them against the record" in html
    assert re.search(r'<tr class="v-ok"><td class="row">H9</td><td class="verdict">ok</td><td class="state">unavailable', html)
    assert 'class="v-gap"><td class="row">H9<' not in html
