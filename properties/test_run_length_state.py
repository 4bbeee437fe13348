"""The per-call sets a run keeps as persistent maps (docs/DEVELOPING.md#rules-for-pure) answer as the sets they
replaced: a model of plain Python sets, fed the same events, names the same bypasses at the same lines
(pure/stream_amendment.py), holds the same denied, decided and bypassed ids (pure/witness.py's
``StreamAccount``), the same answers (``RouteAccount``), and the correlator presents a hook-delivered call once
(pure/correlation.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from metaharness.pure.correlation import Correlator, Present, on_hook_call, on_readings, on_stream_end
from metaharness.pure.events import (
    Allow,
    Deny,
    Event,
    EventValue,
    Stream,
    ToolDecided,
    ToolRequested,
    ToolResult,
    WarningRaised,
)
from metaharness.pure.hook_channel import HookCall
from metaharness.pure.readings import Announced, Emitted
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write
from metaharness.pure.witness import Exchange, RouteAccount, witness

IDS = st.sampled_from([f"c{k}" for k in range(6)])


def requested(call_id: str) -> ToolRequested:
    return ToolRequested(call_id=call_id, name="Bash", input={"command": call_id}, decision_required=True,
                         deadline_ms=1, seam="hook")  # fmt: skip


def decided(call_id: str, allowed: bool) -> ToolDecided:
    return ToolDecided(call_id=call_id, decision=Allow() if allowed else Deny("no"), decided_by="frame", seam="hook",
                       latency_ms=1)  # fmt: skip


def result(call_id: str, failed: bool) -> ToolResult:
    return ToolResult(call_id=call_id, is_error=failed, exit_code=None, outcome_source=None, content=None, bytes=None,
                      tool_use_result=None)  # fmt: skip


EVENTS = st.lists(
    st.one_of(
        IDS.map(requested),
        st.tuples(IDS, st.booleans()).map(lambda t: decided(*t)),
        st.tuples(IDS, st.booleans()).map(lambda t: result(*t)),
    ),
    max_size=40,
)
"""Events over a few call ids, each presented with one input and decided by the frame (the model below leaves out
what only a presentation with another input or an embedder's allow changes: tests/test_stream_amendment.py)."""


def modelled_bypasses(events: list[Event]) -> list[tuple[int, str]]:
    """The amendment's rule over plain sets: a deny and a result that is not an error, in either order, name the
    call bypassed once, right after the later of the two."""
    denied: set[str] = set()
    succeeded: set[str] = set()
    bypassed: set[str] = set()
    named: list[tuple[int, str]] = []
    for index, event in enumerate(events):
        if isinstance(event, ToolDecided) and isinstance(event.decision, Deny):
            if event.call_id in succeeded and event.call_id not in bypassed:
                bypassed.add(event.call_id)
                named.append((index, event.call_id))
            denied.add(event.call_id)
        elif isinstance(event, ToolResult) and event.is_error is False:
            if event.call_id in denied and event.call_id not in bypassed:
                bypassed.add(event.call_id)
                named.append((index, event.call_id))
            succeeded.add(event.call_id)
    return named


@given(EVENTS)
def test_the_amendment_names_the_bypasses_a_model_of_sets_names(events: list[Event]) -> None:
    writer = StreamWriter(Stream("r"), Amendment())
    named: list[tuple[int, str]] = []
    for index, event in enumerate(events):
        writer, lines = write(writer, EventValue(event))
        for line in lines:
            payload = line.line.payload
            if isinstance(payload, WarningRaised) and payload.code == "DECISION_BYPASSED":
                named.append((index, payload.message.split()[3].rstrip(",")))
    assert named == modelled_bypasses(events)
    amendment = writer.amendment
    decisions = [event for event in events if isinstance(event, ToolDecided)]
    assert set(amendment.denied) == {event.call_id for event in decisions if isinstance(event.decision, Deny)}
    assert set(amendment.stream.decided) == {event.call_id for event in decisions}
    assert set(amendment.stream.bypassed) == {call_id for _, call_id in named}
    assert amendment.bypassed == len(named)


@given(st.lists(st.one_of(st.none(), st.sampled_from([" done ", "done", "other", ""])), max_size=12))
def test_the_witness_remembers_every_answer_as_a_set_would(answers: list[str | None]) -> None:
    account = RouteAccount()
    for answer in answers:
        account = witness(account, Exchange((), (), answer))
    assert set(account.answers) == {answer.strip() for answer in answers if answer is not None}
    assert all((word in account.answers) == (word in {a.strip() for a in answers if a is not None})
               for word in ("done", "other", "", "none"))  # fmt: skip


@given(st.lists(st.tuples(st.booleans(), IDS), max_size=30))
def test_the_correlator_presents_a_hook_call_once_and_drops_its_announcement(steps: list[tuple[bool, str]]) -> None:
    """Each hook call is presented at once; an announcement is written (at the stream's end, by path (b)) only
    when the hook delivered its id at no point: before it, the id was presented; after it, the held announcement
    is resolved by the hook."""
    correlator = Correlator(live=True)
    written: list[str] = []
    for by_hook, call_id in steps:
        request = requested(call_id)
        if by_hook:
            call = HookCall(key=call_id, call_id=call_id, name="Bash", input=request.input, correlated=True)
            correlator, outputs = on_hook_call(correlator, call)
            assert [o.call.call_id for o in outputs if isinstance(o, Present)] == [call_id]
        else:
            correlator, outputs = on_readings(correlator, (Announced(call_id, request),))
        written += [o.payload.call_id for o in outputs if isinstance(o, Emitted) and isinstance(o.payload, ToolRequested)]
    correlator, outputs = on_stream_end(correlator)
    written += [o.payload.call_id for o in outputs if isinstance(o, Emitted) and isinstance(o.payload, ToolRequested)]
    hooked = {call_id for by_hook, call_id in steps if by_hook}
    assert written == [call_id for by_hook, call_id in steps if not by_hook and call_id not in hooked]
    assert set(correlator.presented) == hooked
