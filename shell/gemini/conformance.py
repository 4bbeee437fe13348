"""``metaharness conformance gemini``: C3's exchange for the vectors of docs/adapters/gemini.md#conformance, the
live loop against the scripted child (``metaharness.shell.conformance_child``), which writes the captured record on
its stdout and runs the scratch hook program with the captured request; the rest is every vendor's
(``metaharness.shell.vendor_vectors``)."""

from __future__ import annotations

import os
import tempfile

from metaharness.pure.adapter import ReplayRequest
from metaharness.pure.conformance import CALLER, ENDPOINT, HOOK_RECORD, PROMPT, RUN
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.frames import load_frame
from metaharness.pure.gemini.adapter import KIND
from metaharness.pure.gemini.launch import GeminiRunSpec, plan_gemini_launch
from metaharness.pure.gemini.replay import replay_facts
from metaharness.pure.gemini.session import open_session
from metaharness.shell.gemini.live import drive_gemini
from metaharness.shell.gemini.run import materialise
from metaharness.shell.live_engine import StreamLines
from metaharness.shell.vendor_vectors import scripted_launch, vector_file


def run_exchange(frame_file: str) -> tuple[bytes, bytes]:
    """C3: the live run loop against the scripted child, decisions ``frame`` with the vector's frame, run
    ``golden``, ``process`` unknown; returns the hook's answer bytes and the stream."""
    frame = load_frame(vector_file(KIND, frame_file)).unwrap()
    with tempfile.TemporaryDirectory(prefix="metaharness-conformance-") as scratch:
        spec = GeminiRunSpec(prompt=PROMPT, decisions="frame", frame_digest=frame.digest,
                             environment=EnvironmentDeclaration(kind=KIND, credentials="none", model_endpoint=ENDPOINT))
        facts = {f"{CALLER['HOME']}/.local/bin/gemini": ProgramCandidate(regular=True, executable=True)}
        planned = plan_gemini_launch(spec, CALLER, scratch, facts).unwrap()
        launch, answer = scripted_launch(KIND, planned, scratch)
        channel = materialise(launch)
        request = ReplayRequest(run_id=RUN, decisions="frame", transcript_path=HOOK_RECORD)
        session = open_session(replay_facts(request), RUN, "frame", frame)
        lines = StreamLines(RUN)
        try:
            with open(os.devnull, "wb") as transcript:
                drive_gemini(launch=launch, session=session, channel=channel, write_event=lines.write,
                             transcript=transcript, commands=None, on_steering_refusal=lambda line: None,
                             process_known=False)  # fmt: skip
        finally:
            channel.close()
        with open(answer, "rb") as handle:
            return handle.read(), bytes(lines.lines)
