"""What the run adds to its stream as its writer writes it (docs/events.md#stream-ending, #the-twenty-events): the
program it started in ``session.started``, whatever the record said, and the run's outcome in the closing marker."""

from __future__ import annotations

import json

from metaharness.pure.events import (
    Allow,
    Deny,
    Event,
    EventValue,
    Exited,
    Hermetic,
    SessionStarted,
    Stream,
    StreamClosed,
    ToolDecided,
    ToolRequested,
    ToolResult,
    Transcript,
    WarningRaised,
    encode_event,
)
from metaharness.pure.run_stages import failure_cause, failure_line
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write


def amend(state: Amendment, seq: int, payload: Event, at: str | None = None) -> tuple[Amendment, tuple[bytes, ...]]:
    """The lines the writer writes for ``payload`` as the ``seq``-th event of run ``r``."""
    value = EventValue(payload) if at is None else EventValue(payload, at)
    writer, lines = write(StreamWriter(Stream("r", seq - 1), state), value)
    return writer.amendment, tuple(line.encoded for line in lines)


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
        _, (line,) = amend(state, 1, payload, "2026-12-01T00:00:00.000Z")
        assert json.loads(line)["program"] == "/home/op/.local/bin/codex"
        assert line.index(b'"program"') > line.index(b'"harness_version"')


def test_without_a_program_the_opening_record_passes_byte_for_byte() -> None:
    line = encode_event(1, "r", started())
    assert amend(Amendment(), 1, started()) == (Amendment(), (line,))
    assert b'"program"' not in line


def test_a_completed_record_from_a_child_that_exited_1_closes_error() -> None:
    closing = StreamClosed(events=4, reason="completed", run_id="r", process=Exited(code=1))
    _, lines = amend(Amendment(), 5, closing)
    warning, marker = (json.loads(line) for line in lines)
    assert (warning["seq"], warning["code"]) == (5, "RUN_FAILED")
    assert warning["message"] == (
        "the harness exited 1 after a terminal record that reported success; the stream closes error"
    )
    assert (marker["seq"], marker["events"], marker["reason"]) == (6, 5, "error")


def test_no_terminal_record_names_the_program_only_when_no_session_started_did() -> None:
    """Hostile: a harness that dies before its opening record still leaves the program named in the stream."""
    warning = WarningRaised(code="NO_TERMINAL_RECORD", message="the harness stopped without a terminal record; it wrote nothing on stderr")
    state = Amendment(program="/home/op/.local/bin/gemini")
    _, (line,) = amend(state, 1, warning)
    assert json.loads(line)["message"] == ("the harness stopped without a terminal record or session.started "
                                           "(metaharness started /home/op/.local/bin/gemini); it wrote nothing on stderr")  # fmt: skip
    state, _ = amend(state, 1, started())
    _, (line,) = amend(state, 2, warning)
    assert json.loads(line)["message"] == warning.message


def test_a_failed_run_names_its_last_cause_on_one_line() -> None:
    """docs/cli.md#progress-on-stderr: the last RUN_FAILED, NO_TERMINAL_RECORD or RUN_TIMEOUT wins; else an error record."""
    cause = failure_cause(None, WarningRaised(code="NO_TERMINAL_RECORD", message="stopped; its stderr ended: a\nb\n"))
    cause = failure_cause(cause, WarningRaised(code="LOOPBACK_REFUSED", message="not a cause"))
    assert failure_line("r", "error", 3, cause) == "metaharness: run r failed (exit 3): the stream closed error: stopped; its stderr ended: a b\n"
    later = failure_cause(cause, WarningRaised(code="RUN_TIMEOUT", message="the run's --timeout of 1s expired"))
    assert later == "the run's --timeout of 1s expired"
    assert failure_line(None, "killed", 3, None) == "metaharness: run unknown failed (exit 3): the stream closed killed\n"


def _denied_after_success(again: dict[str, str]) -> list[str]:
    """Call ``c`` allowed and succeeded, presented again with ``again``, then denied: the warnings written."""
    def requested(command: dict[str, str]) -> ToolRequested:
        return ToolRequested(call_id="c", name="Bash", input=command, decision_required=True, deadline_ms=None,
                             seam="hook")  # fmt: skip

    def decided(decision: Allow | Deny) -> ToolDecided:
        return ToolDecided(call_id="c", decision=decision, decided_by="frame", seam="hook", latency_ms=0)

    ok = ToolResult(exit_code=0, outcome_source=None, call_id="c", is_error=False, content=None, bytes=None,
                    tool_use_result=None)  # fmt: skip
    writer = StreamWriter(Stream("r"), Amendment())
    codes: list[str] = []
    for payload in (requested({"command": "ls"}), decided(Allow()), ok, requested(again), decided(Deny("no"))):
        writer, lines = write(writer, EventValue(payload))
        codes += [line.line.payload.code for line in lines if isinstance(line.line.payload, WarningRaised)]
    return codes


def test_a_succeeded_call_presented_again_alike_keeps_its_success() -> None:
    """The same call presented again changes nothing: a deny after its success is a bypass; with another input
    it is another call, whose deny is none."""
    assert _denied_after_success({"command": "ls"}) == ["DECISION_BYPASSED"]
    assert _denied_after_success({"command": "rm -rf x"}) == []
