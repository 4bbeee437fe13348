"""``metaharness conformance codex``: C3's exchange for the vectors of docs/adapters/codex.md#conformance-vectors,
the live loop against the scripted child (``metaharness.shell.conformance_child``); the rest is every vendor's
(``metaharness.shell.vendor_vectors``)."""

from __future__ import annotations

import tempfile

from metaharness.pure.budgets import HOOK_TIMEOUT_S
from metaharness.pure.codex.launch import CodexRunSpec, plan_codex_launch
from metaharness.pure.codex.replay import replay_launch
from metaharness.pure.codex.vendor import KIND
from metaharness.pure.conformance import CALLER, ENDPOINT, HOOK_RECORD, PROMPT, RUN
from metaharness.pure.decisions import open_desk
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.frames import load_frame
from metaharness.shell.codex.live import drive_codex
from metaharness.shell.codex.run import materialise
from metaharness.shell.live_engine import StreamLines
from metaharness.shell.vendor_vectors import scripted_launch, vector_file


def run_exchange(frame_file: str) -> tuple[bytes, bytes]:
    """C3: the live run loop against the scripted child, decisions ``frame`` with the vector's
    frame, run ``golden``, ``process`` unknown; returns the hook's answer bytes and the stream."""
    frame = load_frame(vector_file(KIND, frame_file)).unwrap()
    with tempfile.TemporaryDirectory(prefix="metaharness-conformance-") as scratch:
        spec = CodexRunSpec(
            prompt=PROMPT,
            decisions="frame",
            environment=EnvironmentDeclaration(kind=KIND, credentials="none", model_endpoint=ENDPOINT),
            frame_digest=frame.digest,
        )
        facts = {f"{CALLER['HOME']}/.local/bin/codex": ProgramCandidate(regular=True, executable=True)}
        planned = plan_codex_launch(spec, CALLER, scratch, facts).unwrap()
        launch, answer = scripted_launch(KIND, planned, scratch)
        materialise(launch)
        lines = StreamLines(RUN)
        drive_codex(
            launch=launch,
            desk=open_desk("frame", frame, HOOK_TIMEOUT_S * 1000),
            rollout=replay_launch(
                decisions="frame", hermetic="off", transcript_path=HOOK_RECORD, frame_digest=frame.digest
            ),
            run=RUN,
            write_event=lines.write,
            commands=None,
            on_steering_refusal=lambda line: None,
            process_known=False,
        )
        with open(answer, "rb") as handle:
            return handle.read(), bytes(lines.lines)
