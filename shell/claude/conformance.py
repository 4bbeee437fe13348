"""``metaharness conformance claude``: the nine vectors of docs/adapters/claude.md#conformance-vectors read from the
packaged ``vectors/claude/`` files; C3 runs the live loop against the scripted child
(``metaharness.shell.conformance_child``)."""

from __future__ import annotations

import sys
import tempfile
from importlib.resources import files

import msgspec

from metaharness.pure.claude.launch import ClaudeRunSpec, plan_claude_launch
from metaharness.pure.claude.replay import replay_facts
from metaharness.pure.claude.session import open_session
from metaharness.pure.claude.vectors import (
    BANNER,
    ENDPOINT_ROUTE,
    HOOK_RECORD,
    HOOK_REQUEST,
    HOOK_VECTORS,
    INTERPRETER,
    LAUNCH_VECTORS,
    RECORD_VECTORS,
    check_banner,
    check_launch,
    check_replay,
)
from metaharness.pure.conformance import CALLER, PROMPT, RUN, Outcome, check_exchange
from metaharness.pure.environment import ProgramCandidate
from metaharness.pure.frames import load_frame
from metaharness.shell.claude.live import drive_claude
from metaharness.shell.claude.run import materialise
from metaharness.shell.facts import own_cli
from metaharness.shell.scripted_child import stage_scripted_child


def vector_bytes(name: str) -> bytes:
    """A packaged file under ``vectors/claude/``."""
    return files("metaharness.vectors").joinpath("claude", name).read_bytes()


def run_exchange(frame_file: str) -> tuple[bytes, bytes]:
    """C3: the live run loop against the scripted child, decisions ``frame`` with the vector's frame,
    run ``golden``, no plan-time warnings, ``process`` unknown, ``session.started`` with C2's
    transcript and attestation; returns the callback's answer bytes and the stream."""
    frame = load_frame(vector_bytes(frame_file)).unwrap()
    with tempfile.TemporaryDirectory(prefix="metaharness-conformance-") as scratch:
        spec = ClaudeRunSpec(prompt=PROMPT, decisions="frame", environment=ENDPOINT_ROUTE, frame_digest=frame.digest)
        facts = {f"{CALLER['HOME']}/.local/bin/claude": ProgramCandidate(regular=True, executable=True)}
        planned = plan_claude_launch(spec, CALLER, scratch, facts).unwrap()
        child, answer = stage_scripted_child("claude", scratch, vector_bytes(HOOK_RECORD), vector_bytes(HOOK_REQUEST))
        launch = msgspec.structs.replace(planned, program=sys.executable, args=child, cwd=scratch)
        materialise(launch, ())
        session, opening = open_session(
            replay_facts(decisions="frame", hermetic="off", transcript_path=HOOK_RECORD, harness_version=None, model=None),
            RUN,
            "frame",
            frame,
            turn=planned.user_turn,
        )
        lines: list[bytes] = [line for line in opening if isinstance(line, bytes)]
        with open(launch.transcript_path, "wb") as transcript:
            drive_claude(
                argv=launch.argv, env=launch.environment.as_dict(), cwd=launch.cwd, session=session,
                opening=tuple(effect for effect in opening if not isinstance(effect, bytes)), write_event=lines.append,
                transcript=transcript, commands=None, on_steering_refusal=lambda line: None, process_known=False,
            )  # fmt: skip
        with open(answer, "rb") as handle:
            return handle.read(), b"".join(lines)


def claude_outcomes() -> tuple[Outcome, ...]:
    """Every claude vector's outcome, in the order of docs/adapters/claude.md#conformance-vectors."""
    served = own_cli(INTERPRETER)
    outcomes = [check_launch(vector, spec, vector_bytes(fixture), served) for vector, fixture, spec in LAUNCH_VECTORS]
    outcomes += [
        check_replay(vector, stem, vector_bytes(f"{stem}.jsonl"), vector_bytes(f"{stem}.expected.jsonl"))
        for vector, stem in RECORD_VECTORS
    ]
    for vector, frame_file, stem in HOOK_VECTORS:
        answer, stream = run_exchange(frame_file)
        outcomes.append(
            check_exchange(vector, answer, vector_bytes(f"{stem}.answer"), stream, vector_bytes(f"{stem}.expected.jsonl"))
        )
    outcomes.append(check_banner(vector_bytes(BANNER)))
    return tuple(outcomes)
