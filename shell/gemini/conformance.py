"""``metaharness conformance gemini``: the vectors of docs/adapters/gemini.md#conformance read from the packaged
``vectors/gemini/`` files; C3 runs the live loop against the scripted child (``metaharness.shell.conformance_child``),
which writes the captured record on its stdout and runs the scratch hook program with the captured request."""

from __future__ import annotations

import os
import sys
import tempfile
from importlib.resources import files

import msgspec

from metaharness.pure.adapter import ReplayRequest
from metaharness.pure.conformance import CALLER, ENDPOINT, PROMPT, RUN, Outcome, check_exchange
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.frames import load_frame
from metaharness.pure.gemini.adapter import KIND
from metaharness.pure.gemini.launch import GeminiRunSpec, plan_gemini_launch
from metaharness.pure.gemini.replay import replay_facts
from metaharness.pure.gemini.session import open_session
from metaharness.pure.gemini.vectors import (
    BANNER,
    HOOK_RECORD,
    HOOK_REQUEST,
    HOOK_VECTORS,
    LAUNCH_VECTORS,
    RECORD_VECTORS,
    check_banner,
    check_launch,
    check_replay,
)
from metaharness.shell.gemini.live import drive_gemini
from metaharness.shell.gemini.run import materialise
from metaharness.shell.scripted_child import stage_scripted_child


def vector_bytes(name: str) -> bytes:
    """A packaged file under ``vectors/gemini/``."""
    return files("metaharness.vectors").joinpath(KIND, name).read_bytes()


def run_exchange(frame_file: str) -> tuple[bytes, bytes]:
    """C3: the live run loop against the scripted child, decisions ``frame`` with the vector's frame, run
    ``golden``, ``process`` unknown; returns the hook's answer bytes and the stream."""
    frame = load_frame(vector_bytes(frame_file)).unwrap()
    with tempfile.TemporaryDirectory(prefix="metaharness-conformance-") as scratch:
        spec = GeminiRunSpec(prompt=PROMPT, decisions="frame", frame_digest=frame.digest,
                             environment=EnvironmentDeclaration(kind=KIND, credentials="none", model_endpoint=ENDPOINT))
        facts = {f"{CALLER['HOME']}/.local/bin/gemini": ProgramCandidate(regular=True, executable=True)}
        planned = plan_gemini_launch(spec, CALLER, scratch, facts).unwrap()
        child, answer = stage_scripted_child(KIND, scratch, vector_bytes(HOOK_RECORD), vector_bytes(HOOK_REQUEST))
        launch = msgspec.structs.replace(planned, program=sys.executable, args=child, cwd=scratch)
        channel = materialise(launch)
        request = ReplayRequest(run_id=RUN, decisions="frame", transcript_path=HOOK_RECORD)
        session = open_session(replay_facts(request), RUN, "frame", frame)
        lines: list[bytes] = []
        try:
            with open(os.devnull, "wb") as transcript:
                drive_gemini(launch=launch, session=session, channel=channel, write_event=lines.append,
                             transcript=transcript, commands=None, on_steering_refusal=lambda line: None,
                             process_known=False)  # fmt: skip
        finally:
            channel.close()
        with open(answer, "rb") as handle:
            return handle.read(), b"".join(lines)


def gemini_outcomes() -> tuple[Outcome, ...]:
    """Every gemini vector's outcome, in the order of docs/adapters/gemini.md#conformance."""
    outcomes = [check_launch(vector, spec, vector_bytes(fixture)) for vector, fixture, spec in LAUNCH_VECTORS]
    outcomes += [check_replay(vector, stem, vector_bytes(f"{stem}.jsonl"), vector_bytes(f"{stem}.expected.jsonl"))
                 for vector, stem in RECORD_VECTORS]  # fmt: skip
    for vector, frame_file, stem in HOOK_VECTORS:
        answer, stream = run_exchange(frame_file)
        outcomes.append(check_exchange(vector, answer, vector_bytes(f"{stem}.answer"), stream,
                                       vector_bytes(f"{stem}.expected.jsonl")))  # fmt: skip
    outcomes.append(check_banner(vector_bytes(BANNER)))
    return tuple(outcomes)
