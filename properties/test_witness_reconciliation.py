"""The route witness names exactly what disagrees, whatever the interleaving of the model's calls, the
stream's decisions and the results the harness sent (docs/decisions.md#the-route-witness)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.adapter import WitnessFacts
from metaharness.pure.events import (
    Allow,
    Census,
    Deny,
    Event,
    EventValue,
    FinalAnswer,
    RouteTraffic,
    SessionEnded,
    Stream,
    ToolDecided,
    ToolRequested,
    ToolResult,
    WarningRaised,
    read_event,
)
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write
from metaharness.pure.witness import (
    EmittedCall,
    Exchange,
    RouteAccount,
    SentResult,
    StreamAccount,
    observe_event,
    reconcile,
    witness,
)

REASON = "frame denies shell"
CALL = re.compile(r"\b(c\d+)\b")
CENSUS = Census(allowed=0, denied=0, replaced=0, abstained=0, by_seam={}, by_decider={})

plans = st.lists(
    st.fixed_dictionaries({
        "emitted": st.booleans(),
        "requested": st.sampled_from(["none", "same", "laundered"]),
        "decision": st.sampled_from(["none", "allow", "deny"]),
        "result": st.sampled_from(["none", "denial", "ran"]),
        "stream_result": st.sampled_from(["none", "error", "ok"]),
        "again": st.booleans(),
    }),
    min_size=1, max_size=5,
)  # fmt: skip


def _input(call: int) -> dict[str, Any]:
    return {"argv": ["touch", f"f{call}"]}


def _exchanges(plan: list[dict[str, Any]]) -> list[Exchange]:
    """Each emitted call in its own exchange, each sent result in another; the last answers ``done``."""
    out = [Exchange((EmittedCall(f"c{i}", "run", _input(i)),), (), None) for i, p in enumerate(plan) if p["emitted"]]
    for i, p in enumerate(plan):
        if p["result"] != "none":
            denial = p["result"] == "denial"
            text = f"`run` was not approved: {REASON}" if denial else "touched"
            out.append(Exchange((), (SentResult(f"c{i}", denial, text),), None))
    return [*out, Exchange((), (), "done")]


def _stream(plan: list[dict[str, Any]]) -> list[list[Event]]:
    """Each call's own events, in order; the lists interleave freely."""
    streams = []
    for i, p in enumerate(plan):
        events: list[Event] = []
        if p["requested"] != "none":
            input = _input(i) if p["requested"] == "same" else {"argv": ["echo", "harmless"]}
            events.append(ToolRequested(call_id=f"c{i}", name="run", input=input, decision_required=False,
                                        deadline_ms=None, seam="hook"))  # fmt: skip
            if p["again"]:
                events.append(events[-1])
        if p["decision"] != "none":
            decision = Deny(reason=REASON) if p["decision"] == "deny" else Allow()
            events.append(ToolDecided(call_id=f"c{i}", decision=decision, decided_by="frame", seam="hook", latency_ms=0))
        if p["stream_result"] != "none":
            events.append(ToolResult(exit_code=None, outcome_source=None, call_id=f"c{i}",
                                     is_error=p["stream_result"] == "error", content=None, bytes=None,
                                     tool_use_result=None))  # fmt: skip
        streams.append(events)
    return streams


def _interleave(streams: list[list[Event]], order: list[int]) -> list[Event]:
    """The calls' events merged, taking the next event of call ``order[k] mod n`` at each step."""
    queues = [list(s) for s in streams if s]
    merged: list[Event] = []
    for pick in order:
        if not queues:
            break
        queue = queues[pick % len(queues)]
        merged.append(queue.pop(0))
        queues = [q for q in queues if q]
    return merged + [event for q in queues for event in q]


def _ended() -> SessionEnded:
    fields: dict[str, Any] = {name: None for name in SessionEnded.__struct_fields__}
    fields.update(final_answer=FinalAnswer(text="done", turn_id=None), census=CENSUS)
    fields.pop("route")
    fields.pop("rows")
    return SessionEnded(**fields)


def _findings(warnings: tuple[WarningRaised, ...]) -> Counter[tuple[str, str]]:
    return Counter((w.code, CALL.findall(w.message)[0]) for w in warnings)


def _expected(plan: list[dict[str, Any]], deciding: bool) -> Counter[tuple[str, str]]:
    expected: Counter[tuple[str, str]] = Counter()
    for i, p in enumerate(plan):
        call = f"c{i}"
        covered = p["requested"] != "none" and p["decision"] != "none"
        if p["emitted"] and not covered and deciding:
            expected["COVERAGE_GAP", call] += 1
        if p["emitted"] and p["requested"] == "laundered":
            expected["DECISION_LAUNDERED", call] += 1
        if not p["emitted"] and p["result"] != "none":
            expected["RECORD_FORGED", call] += 1
        if p["emitted"] and p["decision"] == "deny" and p["result"] == "ran":
            expected["DECISION_BYPASSED", call] += 1
    return expected


@settings(max_examples=200, deadline=None)
@given(plans, st.lists(st.integers(0, 9), max_size=30), st.randoms(use_true_random=False), st.booleans())
def test_the_findings_are_exactly_the_disagreements_in_any_order(
    plan: list[dict[str, Any]], order: list[int], shuffle: Any, deciding: bool
) -> None:
    exchanges = _exchanges(plan)
    shuffle.shuffle(exchanges)
    account = RouteAccount()
    for exchange in exchanges:
        account = witness(account, exchange)
    seen = StreamAccount()
    for event in _interleave(_stream(plan), order):
        seen = observe_event(seen, event)
    warnings, calls = reconcile(account, seen, _ended(), WitnessFacts(), deciding)
    assert _findings(warnings) == _expected(plan, deciding)
    emitted = [p for p in plan if p["emitted"]]
    assert calls.emitted == len(emitted)
    assert calls.decided == sum(1 for p in emitted if p["requested"] != "none" and p["decision"] != "none")
    assert calls.reconciled == sum(1 for p in emitted if p["requested"] == "same" and p["decision"] != "none")


@settings(max_examples=200, deadline=None)
@given(plans, st.lists(st.integers(0, 9), max_size=30))
def test_a_bypassed_call_is_named_once_and_counted_whichever_check_sees_it(
    plan: list[dict[str, Any]], order: list[int]
) -> None:
    account = RouteAccount()
    for exchange in _exchanges(plan):
        account = witness(account, exchange)
    writer, lines = StreamWriter(Stream("r"), Amendment()), []
    traffic = RouteTraffic(requests=1, bytes_up=0, bytes_down=0)
    for payload in [*_interleave(_stream(plan), order), _ended()]:
        writer, out = write(writer, EventValue(payload), traffic, account)
        lines += [read_event(line.encoded).unwrap() for line in out]
    assert [line.seq for line in lines] == list(range(1, len(lines) + 1))
    named = Counter(_findings(tuple(line.payload for line in lines if isinstance(line.payload, WarningRaised)
                                    and line.payload.code == "DECISION_BYPASSED")))  # fmt: skip
    assert all(count == 1 for count in named.values())
    live = {f"c{i}" for i, p in enumerate(plan) if p["decision"] == "deny" and p["stream_result"] == "ok"}
    route = {f"c{i}" for i, p in enumerate(plan) if p["emitted"] and p["decision"] == "deny" and p["result"] == "ran"}
    assert {call for _, call in named} == live | route
    (ended,) = [line.payload for line in lines if isinstance(line.payload, SessionEnded)]
    assert (ended.census.bypassed or 0) == len(live | route)
