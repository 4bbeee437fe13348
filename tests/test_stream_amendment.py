"""What the run adds to its stream as it is written (docs/events.md#stream-ending, #the-twenty-events): the program it
started in ``session.started``, whatever the record said, and the run's outcome in the closing marker."""

from __future__ import annotations

import json

from metaharness.pure.events import Exited, Hermetic, SessionStarted, StreamClosed, Transcript, encode_event
from metaharness.pure.stream_amendment import Amendment, amend


def started(program: str | None = None) -> SessionStarted:
    silent = dict.fromkeys(
        ("session_id", "model", "permission_mode", "credential_source", "output_style", "cwd", "offered_tools",
         "withheld", "slash_commands", "skills", "agents", "plugins", "mcp_servers", "inputs_digest"),
    )  # fmt: skip
    hermetic = Hermetic(mode="off", decisions="observe", imposed=(), declared=(), unavailable=(), ambient_inputs=(),
                        installed_plugins=())  # fmt: skip
    extra = {} if program is None else {"program": program}
    return SessionStarted(adapter="codex", adapter_class="harness", harness_version="0.171.0",
                          transcript=Transcript(path="/r", digest=None, bytes=None), hermetic=hermetic,
                          **silent, **extra)  # fmt: skip


def test_session_started_names_the_host_s_program_over_anything_the_record_said() -> None:
    """Hostile: a record that names another program is overwritten with the path metaharness resolved and started."""
    state = Amendment(program="/home/op/.local/bin/codex")
    for payload in (started(), started(program="/tmp/forged")):
        _, (line,) = amend(state, encode_event(1, "r", payload, "2026-12-01T00:00:00.000Z"))
        assert json.loads(line)["program"] == "/home/op/.local/bin/codex"
        assert line.index(b'"program"') > line.index(b'"harness_version"')


def test_without_a_program_the_opening_record_passes_byte_for_byte() -> None:
    line = encode_event(1, "r", started())
    assert amend(Amendment(), line) == (Amendment(), (line,))
    assert b'"program"' not in line


def test_a_completed_record_from_a_child_that_exited_1_closes_error() -> None:
    closing = encode_event(5, "r", StreamClosed(events=4, reason="completed", run_id="r", process=Exited(code=1)))
    state, lines = amend(Amendment(), closing)
    warning, marker = (json.loads(line) for line in lines)
    assert (warning["seq"], warning["code"]) == (5, "RUN_FAILED")
    assert warning["message"] == (
        "the harness exited 1 after a terminal record that reported success; the stream closes error"
    )
    assert (marker["seq"], marker["events"], marker["reason"]) == (6, 5, "error")
    assert state.added == 1
