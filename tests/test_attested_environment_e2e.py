"""The environment a confined harness starts with is exactly the one row H3 attests (docs/hermetic.md),
on every kind: the real vendor CLI or the loop runs under ``--decisions ask`` against ``b10x-emulator``,
and while its first call waits for an answer the test reads, from outside the view, the environment of
the first process below metaharness that is neither bubblewrap nor the view's init, and compares its names with H3's ``how``.
Claude Code's case, with the tools' layer's own, is in tests/test_two_layers_e2e.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from governed_b10x import LOOP
from helpers.emulator import running_emulator
from vendor_cli import home_linking_the_clis, pinned_cli

METAHARNESS = str(Path(sys.executable).with_name("metaharness"))
SCENARIOS = {"b10x": "flat-write", "codex": "codex-shell-steps", "gemini": "gemini-shell-steps"}
CASES = [pytest.param(kind, marks=pytest.mark.skipif(kind != "b10x" and pinned_cli(kind) is None, reason=f"no pinned {kind}"))
         for kind in SCENARIOS]  # fmt: skip


INIT = b"metaharness.shell.confine_init"
"""The view's init, which starts the harness (docs/confinement.md)."""


def first_started(root: int) -> int | None:
    """The first process below ``root``, breadth first, that is neither bubblewrap nor the view's init: the harness."""
    pending = [root]
    while pending:
        pid = pending.pop(0)
        try:
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if pid != root and Path(f"/proc/{pid}/comm").read_text().strip() != "bwrap" and INIT not in words:
                return pid
            for task in os.listdir(f"/proc/{pid}/task"):
                pending += [int(w) for w in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            continue
    return None


@pytest.mark.parametrize("kind", CASES)
def test_the_harness_starts_with_exactly_the_attested_environment(kind: str, tmp_path: Path) -> None:
    home = home_linking_the_clis(tmp_path / "home")
    (home / ".local" / "bin" / "b10x-harness").symlink_to(LOOP)
    with running_emulator("--scenario", SCENARIOS[kind]) as (base_url, _):
        endpoint = base_url if kind == "b10x" else base_url.removesuffix("/v1")
        argv = [METAHARNESS, "run", kind, "--decisions", "ask", "--credentials", "none", "--model-endpoint", endpoint,
                "--confine", "on", "-p", "do the steps\n$ echo hi\n",
                *(["--model", "b10x-emulated"] if kind == "b10x" else [])]  # fmt: skip
        run = subprocess.Popen(argv, env={"HOME": str(home), "PATH": os.environ["PATH"]}, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        assert run.stdin is not None and run.stdout is not None and run.stderr is not None
        attested: set[str] | None = None
        environ: set[str] | None = None
        for line in run.stdout:
            event = json.loads(line)
            if event["event"] == "session.started":
                (h3,) = [row["how"] for row in event["hermetic"]["imposed"] if row["row"] == "H3"]
                attested = set(h3.removeprefix("environment constructed: ").split(", "))
            if event["event"] == "tool.requested" and event["decision_required"] and environ is None:
                harness = first_started(run.pid)
                assert harness is not None
                environ = {e.split(b"=", 1)[0].decode() for e in Path(f"/proc/{harness}/environ").read_bytes().split(b"\0") if e}
                answer = {"format": "metaharness.command/1", "id": "a1", "command": "tool.decide",
                          "call_id": event["call_id"], "decision": {"decision": "deny", "reason": "not now"}}  # fmt: skip
                run.stdin.write(json.dumps(answer).encode() + b"\n")
                run.stdin.flush()
            if event["event"] == "stream.closed":
                break
        run.stdin.close()
        run.wait(timeout=120)
        stderr = run.stderr.read().decode()
    assert attested is not None and environ is not None, stderr
    assert environ == attested, (sorted(environ - attested), sorted(attested - environ))
    assert not {"PWD", "LC_CTYPE", "LC_ALL", "PYTHONCOERCECLOCALE"} & environ
