"""``metaharness conformance gemini`` (docs/adapters/gemini.md#conformance): the seven packaged vectors pass, and
each tier fails when what it holds moves."""

from __future__ import annotations

import subprocess
import sys
from functools import partial
from pathlib import Path

from metaharness.pure.conformance import check_banner, check_launch, check_replay
from metaharness.pure.gemini.launch import GeminiRunSpec
from metaharness.pure.gemini.vectors import LAUNCH_VECTORS, VECTORS
from metaharness.shell.vendor_vectors import vector_file

vector_bytes = partial(vector_file, "gemini")
METAHARNESS = str(Path(sys.executable).with_name("metaharness"))


def test_every_vector_passes_with_no_model_network_or_credential() -> None:
    done = subprocess.run([METAHARNESS, "conformance", "gemini"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[:3] for line in lines[:-1]] == [
        ["pass", "C1", "c1-launch"], ["pass", "C1", "c1-launch-loopback"], ["pass", "C2", "c2-record-write"],
        ["pass", "C2", "c2-record-shell"], ["pass", "C3", "c3-hook-deny"], ["pass", "C3", "c3-hook-allow"],
        ["pass", "C4", "c4-version-banner"]]
    assert lines[-1] == "7 vectors, 0 failed — no model, no network, no credential"


def test_each_tier_fails_when_what_it_holds_moves() -> None:
    vector, fixture, spec = LAUNCH_VECTORS[0]
    moved: GeminiRunSpec = GeminiRunSpec(prompt=spec.prompt + "!", decisions=spec.decisions,
                                         environment=spec.environment)  # fmt: skip
    assert check_launch(VECTORS, vector, moved, vector_bytes(fixture)).status == "FAIL"
    record = vector_bytes("record/write.jsonl").replace(b'"status":"success"', b'"status":"error"', 1)
    assert check_replay(VECTORS, "c2", "record/write", record, vector_bytes("record/write.expected.jsonl")).status == "FAIL"
    assert check_banner(VECTORS, b"0.62.0\n").status == "warn" and check_banner(VECTORS, b"gemini 0.61.0\n").status == "FAIL"
