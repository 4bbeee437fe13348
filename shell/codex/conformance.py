"""``metaharness conformance codex``: the nine vectors of docs/adapters/codex.md#conformance-vectors read from the
packaged ``vectors/codex/`` files; C3 runs the live loop against the scripted child
(``metaharness.shell.conformance_child``)."""

from __future__ import annotations

import sys
import tempfile
from importlib.resources import files

import msgspec

from metaharness.pure.budgets import HOOK_TIMEOUT_S
from metaharness.pure.codex.launch import CodexRunSpec, plan_codex_launch
from metaharness.pure.codex.replay import replay_launch
from metaharness.pure.codex.vectors import (
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
from metaharness.pure.conformance import CALLER, ENDPOINT, PROMPT, RUN, Outcome, check_exchange
from metaharness.pure.decisions import open_desk
from metaharness.pure.environment import EnvironmentDeclaration, ProgramCandidate
from metaharness.pure.frames import load_frame
from metaharness.shell.codex.live import drive_codex
from metaharness.shell.codex.run import materialise
from metaharness.shell.scripted_child import stage_scripted_child


def vector_bytes(name: str) -> bytes:
    """A packaged file under ``vectors/codex/``."""
    return files("metaharness.vectors").joinpath("codex", name).read_bytes()


def run_exchange(frame_file: str) -> tuple[bytes, bytes]:
    """C3: the live run loop against the scripted child, decisions ``frame`` with the vector's
    frame, run ``golden``, ``process`` unknown; returns the hook's answer bytes and the stream."""
    frame = load_frame(vector_bytes(frame_file)).unwrap()
    with tempfile.TemporaryDirectory(prefix="metaharness-conformance-") as scratch:
        spec = CodexRunSpec(
            prompt=PROMPT,
            decisions="frame",
            environment=EnvironmentDeclaration(kind="codex", credentials="none", model_endpoint=ENDPOINT),
            frame_digest=frame.digest,
        )
        facts = {f"{CALLER['HOME']}/.local/bin/codex": ProgramCandidate(regular=True, executable=True)}
        planned = plan_codex_launch(spec, CALLER, scratch, facts).unwrap()
        child, answer = stage_scripted_child("codex", scratch, vector_bytes(HOOK_RECORD), vector_bytes(HOOK_REQUEST))
        launch = msgspec.structs.replace(planned, program=sys.executable, args=child, cwd=scratch)
        materialise(launch)
        lines: list[bytes] = []
        drive_codex(
            launch=launch,
            desk=open_desk("frame", frame, HOOK_TIMEOUT_S * 1000),
            rollout=replay_launch(
                decisions="frame", hermetic="off", transcript_path=HOOK_RECORD, frame_digest=frame.digest
            ),
            run=RUN,
            write_event=lines.append,
            commands=None,
            on_steering_refusal=lambda line: None,
            process_known=False,
        )
        with open(answer, "rb") as handle:
            return handle.read(), b"".join(lines)


def codex_outcomes() -> tuple[Outcome, ...]:
    """Every codex vector's outcome, in the order of docs/adapters/codex.md#conformance-vectors."""
    outcomes = [check_launch(vector, spec, vector_bytes(fixture)) for vector, fixture, spec in LAUNCH_VECTORS]
    outcomes += [
        check_replay(vector, stem, vector_bytes(f"{stem}.jsonl"), vector_bytes(f"{stem}.expected.jsonl"))
        for vector, stem in RECORD_VECTORS
    ]
    for vector, frame_file, stem in HOOK_VECTORS:
        answer, stream = run_exchange(frame_file)
        outcomes.append(
            check_exchange(
                vector, answer, vector_bytes(f"{stem}.answer"), stream, vector_bytes(f"{stem}.expected.jsonl")
            )
        )
    outcomes.append(check_banner(vector_bytes(BANNER)))
    return tuple(outcomes)
