"""A tool rings the hook channel's doorbell with thousands of made-up keys while the real codex waits for
a decision (docs/adapters/common.md#child-trees): the stream names the first 16 as ``COVERAGE_GAP``, then
one ``DOORBELL_FLOODED`` and no more, the real call is still decided and runs, and the run ends with its
closed stream and report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from codex_process import CODEX, PINNED, of, well_formed
from helpers.emulator import running_emulator

from metaharness.pure.bounds import UNREAD_KEY_LIMIT

pytestmark = [
    pytest.mark.skipif(CODEX is None, reason=f"the pinned Codex CLI {PINNED} is not installed (vendors/install.sh)"),
    pytest.mark.usefixtures("own_home"),
]

BOGUS_KEYS = 20_000
"""Made-up keys rung at once: 200 KiB, more than a pipe holds, so the writer blocks until the run drains it."""


def ring_bogus_keys(scratch: Path) -> None:
    """What a tool that reaches the channel does: a blocking write of every key to the doorbell."""
    doorbell = os.open(scratch / "hook-channel" / "doorbell", os.O_WRONLY)
    try:
        data = b"".join(f"BOG{n:05d}\n".encode() for n in range(BOGUS_KEYS))
        view = memoryview(data)
        while view:
            view = view[os.write(doorbell, view) :]
    finally:
        os.close(doorbell)


def test_a_flood_of_made_up_doorbell_keys_is_one_warning_and_the_real_call_still_runs(tmp_path: Path) -> None:
    with running_emulator("--scenario", "codex-shell-steps") as (base_url, _):
        argv = [sys.executable, "-m", "metaharness.shell", "run", "codex", "--credentials", "none",
                "--model-endpoint", base_url.removesuffix("/v1"), "-p", "do the steps\n$ echo after-the-flood\n",
                "--decisions", "ask", "--audit", "--spec", str(tmp_path / "spec.md"), "--auditor", "/bin/true"]  # fmt: skip
        (tmp_path / "spec.md").write_text("any\n")
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        lines: list[bytes] = []
        try:
            for line in iter(process.stdout.readline, b""):
                lines.append(line)
                event = json.loads(line)
                if event["event"] == "tool.requested" and event.get("decision_required"):
                    scratch = Path(of([json.loads(raw) for raw in lines], "session.started")[0]["cwd"]).parent
                    ring_bogus_keys(scratch)
                    command = {"format": "metaharness.command/1", "id": "c1", "command": "tool.decide",
                               "call_id": event["call_id"], "decision": {"decision": "allow"}}  # fmt: skip
                    process.stdin.write(json.dumps(command).encode() + b"\n")
                    process.stdin.flush()
            process.stdin.close()
            stderr = process.stderr.read().decode()
            process.wait(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    events = well_formed(lines)
    warnings = [e for e in of(events, "warning") if e["code"] in ("COVERAGE_GAP", "DOORBELL_FLOODED")]
    gaps = [w for w in warnings if w["code"] == "COVERAGE_GAP" and "BOG" in w["message"]]
    flooded = [w for w in warnings if w["code"] == "DOORBELL_FLOODED"]
    assert len(gaps) == UNREAD_KEY_LIMIT and len(flooded) == 1, [w["message"] for w in warnings][:20]
    assert len(lines) < 200, "the flood adds its 17 lines, not one a key"
    (decided,) = of(events, "tool.decided")
    assert decided["decided_by"] == "embedder" and decided["decision"] == {"decision": "allow"}
    assert "after-the-flood" in json.dumps([e["content"] for e in of(events, "tool.result")])
    assert events[-1]["reason"] == "completed", events[-1]
    assert "internal-error" not in stderr and "Traceback" not in stderr and "control verdict: " in stderr, stderr
