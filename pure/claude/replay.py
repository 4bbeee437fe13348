"""``replay claude RECORD``: a retained stream-json transcript mapped offline through the live reader
and correlator (docs/events.md#replay, docs/adapters/common.md#one-event-per-call).

Every call takes the record path with no warning; nothing is decided, so the census is zero; no
terminal record is invented; ``stream.closed.process`` is unknown. The control lines of the in-band seam (the
``initialize`` reply, ``hook_callback`` requests, ``control_cancel_request``, the echoes of control responses) and
the first echoed user message (the run's own turn) yield nothing, as they do live
(docs/adapters/claude.md#in-band-decisions); any other control request is ``opaque``. Replay cannot tell a
forged line from metaharness's own, so it raises no ``INPUT_FORGED``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial

from metaharness.pure.adapter import ReplayOutput, ReplayRequest
from metaharness.pure.claude.control import HookCallback, Reply, Withdrawn, read_control, replayed_turn
from metaharness.pure.claude.seam import BUDGET_WORDS, RecordState, SessionFacts, map_record, terminal_stop
from metaharness.pure.correlation import correlated_stream
from metaharness.pure.events import (
    Hermetic,
    Transcript,
    closed_reason,
)
from metaharness.pure.readings import record_lines


def replay_facts(
    *, decisions: str, hermetic: str, transcript_path: str, harness_version: str | None, model: str | None
) -> SessionFacts:
    """``session.started``'s launch facts under replay (docs/events.md#replay): ``transcript`` ``{path, null,
    null}`` and an attestation naming only the mode and decisions."""
    return SessionFacts(
        transcript=Transcript(path=transcript_path, digest=None, bytes=None),
        hermetic=Hermetic(
            mode=hermetic,  # type: ignore[arg-type]
            decisions=decisions,  # type: ignore[arg-type]
            imposed=(),
            declared=(),
            unavailable=(),
            ambient_inputs=(),
            installed_plugins=(),
        ),
        model=model,
        harness_version=harness_version,
    )


def replay_claude(record: bytes, facts: SessionFacts, run: str) -> tuple[bytes, str]:
    """The whole ``metaharness.event/1`` stream of a retained transcript, and its closing reason."""
    stream = b"".join(replayed_lines(record_lines(record), facts, run))
    return stream, closed_reason(stream)


def replayed_lines(lines: Iterable[bytes], facts: SessionFacts, run: str) -> Iterator[bytes]:
    """Each event line of the stream as the transcript's lines (terminators removed) are read: the
    record is never held, and each event is yielded once the line that makes it is read."""
    return correlated_stream(run, _mapped_lines(lines), RecordState(), partial(map_record, facts=facts), terminal_stop,
                             BUDGET_WORDS)  # fmt: skip


def _mapped_lines(lines: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """The transcript's numbered lines the record maps: not the control protocol's lines (``initialize`` and its
    reply, hook callbacks, withdrawals), nor the first echo of the user turn."""
    echoed = False
    for number, raw in enumerate(lines, start=1):
        control = read_control(raw)
        if control is not None and isinstance(control, HookCallback | Reply | Withdrawn):
            continue
        if not echoed and replayed_turn(raw) is not None:
            echoed = True
            continue
        yield number, raw


def replay(lines: Iterable[bytes], request: ReplayRequest) -> Iterator[ReplayOutput]:
    """Claude Code's stream-json record mapped as ``replay`` maps it, line by line."""
    facts = replay_facts(decisions=request.attested_decisions, hermetic=request.hermetic, transcript_path=request.transcript_path,
                         harness_version=request.harness_version, model=request.model)  # fmt: skip
    return replayed_lines(lines, facts, request.run_id)
