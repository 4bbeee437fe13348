"""``metaharness conformance claude``: C3's exchange for the vectors of docs/adapters/claude.md#conformance-vectors,
the live loop against the scripted child (``metaharness.shell.conformance_child``); the rest is every vendor's
(``metaharness.shell.vendor_vectors``)."""

from __future__ import annotations

import tempfile

from metaharness.pure.claude.launch import ClaudeRunSpec, plan_claude_launch
from metaharness.pure.claude.replay import replay_facts
from metaharness.pure.claude.session import open_session
from metaharness.pure.claude.vectors import ENDPOINT_ROUTE
from metaharness.pure.claude.vendor import KIND
from metaharness.pure.conformance import CALLER, HOOK_RECORD, PROMPT, RUN
from metaharness.pure.environment import ProgramCandidate
from metaharness.pure.events import EventValue
from metaharness.pure.frames import load_frame
from metaharness.shell.claude.live import drive_claude
from metaharness.shell.claude.run import materialise
from metaharness.shell.live_engine import StreamLines
from metaharness.shell.vendor_vectors import scripted_launch, vector_file


def run_exchange(frame_file: str) -> tuple[bytes, bytes]:
    """C3: the live run loop against the scripted child, decisions ``frame`` with the vector's frame,
    run ``golden``, no plan-time warnings, ``process`` unknown, ``session.started`` with C2's
    transcript and attestation; returns the callback's answer bytes and the stream."""
    frame = load_frame(vector_file(KIND, frame_file)).unwrap()
    with tempfile.TemporaryDirectory(prefix="metaharness-conformance-") as scratch:
        spec = ClaudeRunSpec(prompt=PROMPT, decisions="frame", environment=ENDPOINT_ROUTE, frame_digest=frame.digest)
        facts = {f"{CALLER['HOME']}/.local/bin/claude": ProgramCandidate(regular=True, executable=True)}
        planned = plan_claude_launch(spec, CALLER, scratch, facts).unwrap()
        launch, answer = scripted_launch(KIND, planned, scratch)
        materialise(launch, ())
        session, opening = open_session(
            replay_facts(decisions="frame", hermetic="off", transcript_path=HOOK_RECORD, harness_version=None, model=None),
            RUN,
            "frame",
            frame,
            turn=planned.user_turn,
        )
        lines = StreamLines(RUN)
        for value in opening:
            if isinstance(value, EventValue):
                lines.write(value)
        with open(launch.transcript_path, "wb") as transcript:
            drive_claude(
                argv=launch.argv, env=launch.environment.as_dict(), cwd=launch.cwd, session=session,
                opening=tuple(effect for effect in opening if not isinstance(effect, EventValue)), write_event=lines.write,
                transcript=transcript, commands=None, on_steering_refusal=lambda line: None, process_known=False,
            )  # fmt: skip
        with open(answer, "rb") as handle:
            return handle.read(), bytes(lines.lines)
