"""The route witness for a kind whose seam carries no call id (gemini): the model's calls are matched to the
stream's by name and input, so whatever ids the wire gave them (none: the decoder numbers them ``run#1`` per
response; or the stream's own) and in whatever order things arrived, every call the model emitted that no
decision covered is named, and nothing matched is (docs/decisions.md#the-route-witness)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.adapter import WitnessFacts
from metaharness.pure.events import Allow, Census, Deny, Event, FinalAnswer, SessionEnded, ToolDecided, ToolRequested
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
NAMED = re.compile(r"\b(c\d+|run#\d+)")
KEYLESS = WitnessFacts(by_presentation=True)
CENSUS = Census(allowed=0, denied=0, replaced=0, abstained=0, by_seam={}, by_decider={})

plans = st.lists(
    st.fixed_dictionaries({
        "emitted": st.booleans(),
        "requested": st.sampled_from(["none", "same", "laundered"]),
        "decision": st.sampled_from(["none", "allow", "deny"]),
        "result": st.sampled_from(["none", "denial", "ran"]),
    }),
    min_size=1, max_size=5,
)  # fmt: skip


def _input(call: int) -> dict[str, Any]:
    return {"command": f"touch f{call}", "description": "a step"}


def _exchanges(plan: list[dict[str, Any]], keyed: bool) -> list[Exchange]:
    """Each emitted call in its own response (keyless: numbered ``run#1`` there, as the decoder does), each
    sent result under the id the harness gave the call, which is the stream's; the last answers ``done``."""
    out = [Exchange((EmittedCall(f"c{i}" if keyed else "run#1", "run", _input(i), numbered=not keyed),), (), None)
           for i, p in enumerate(plan) if p["emitted"]]  # fmt: skip
    for i, p in enumerate(plan):
        if p["result"] != "none":
            text = f'{{"error":"`run` was not approved: {REASON}"}}' if p["result"] == "denial" else '{"output":"ok"}'
            out.append(Exchange((), (SentResult(f"c{i}", None, text),), None))
    return [*out, Exchange((), (), "done")]


def _stream(plan: list[dict[str, Any]], order: list[int]) -> list[Event]:
    """The stream's requests and decisions, the calls taken in ``order``."""
    events: list[list[Event]] = []
    for i, p in enumerate(plan):
        mine: list[Event] = []
        if p["requested"] != "none":
            value = _input(i) if p["requested"] == "same" else {"command": "echo harmless", "description": "a step"}
            mine.append(ToolRequested(call_id=f"c{i}", name="run", input=value, decision_required=False,
                                      deadline_ms=None, seam="hook"))  # fmt: skip
        if p["decision"] != "none":
            decision = Deny(reason=REASON) if p["decision"] == "deny" else Allow()
            mine.append(ToolDecided(call_id=f"c{i}", decision=decision, decided_by="frame", seam="hook", latency_ms=0))
        events.append(mine)
    picked = [i % len(plan) for i in order] + list(range(len(plan)))
    return [event for i in dict.fromkeys(picked) for event in events[i]]


def _ended() -> SessionEnded:
    fields: dict[str, Any] = {name: None for name in SessionEnded.__struct_fields__}
    fields.update(final_answer=FinalAnswer(text="done", turn_id=None), census=CENSUS)
    fields.pop("route")
    fields.pop("rows")
    return SessionEnded(**fields)


def _run(plan: list[dict[str, Any]], order: list[int], shuffle: Any, keyed: bool, deciding: bool) -> Any:
    exchanges = _exchanges(plan, keyed)
    shuffle.shuffle(exchanges)
    account = RouteAccount()
    for exchange in exchanges:
        account = witness(account, exchange)
    seen = StreamAccount()
    for event in _stream(plan, order):
        seen = observe_event(seen, event)
    return reconcile(account, seen, _ended(), KEYLESS, deciding)


def _keyless_expected(plan: list[dict[str, Any]], deciding: bool) -> Counter[tuple[str, str]]:
    """Without ids: an emission matches the stream's call presented with its input; one that matches none is
    named under its wire number, and a result for a call that matched no emission is one the model never made."""
    expected: Counter[tuple[str, str]] = Counter()
    for i, p in enumerate(plan):
        matched = p["emitted"] and p["requested"] == "same"
        if p["emitted"] and deciding and not (matched and p["decision"] != "none"):
            expected["COVERAGE_GAP", f"c{i}" if matched else "run#1"] += 1
        if p["result"] != "none" and not matched:
            expected["RECORD_FORGED", f"c{i}"] += 1
        if matched and p["decision"] == "deny" and p["result"] == "ran":
            expected["DECISION_BYPASSED", f"c{i}"] += 1
    return expected


def _keyed_expected(plan: list[dict[str, Any]], deciding: bool) -> Counter[tuple[str, str]]:
    """With the stream's ids on the wire the matching changes nothing: the findings are the id witness's."""
    expected: Counter[tuple[str, str]] = Counter()
    for i, p in enumerate(plan):
        covered = p["requested"] != "none" and p["decision"] != "none"
        if p["emitted"] and not covered and deciding:
            expected["COVERAGE_GAP", f"c{i}"] += 1
        if p["emitted"] and p["requested"] == "laundered":
            expected["DECISION_LAUNDERED", f"c{i}"] += 1
        if not p["emitted"] and p["result"] != "none":
            expected["RECORD_FORGED", f"c{i}"] += 1
        if p["emitted"] and p["decision"] == "deny" and p["result"] == "ran":
            expected["DECISION_BYPASSED", f"c{i}"] += 1
    return expected


@settings(max_examples=200, deadline=None)
@given(plans, st.lists(st.integers(0, 9), max_size=12), st.randoms(use_true_random=False), st.booleans(), st.booleans())
def test_every_undecided_emission_is_named_whatever_the_ids_and_the_order(
    plan: list[dict[str, Any]], order: list[int], shuffle: Any, keyed: bool, deciding: bool
) -> None:
    warnings, calls = _run(plan, order, shuffle, keyed, deciding)
    found = Counter((w.code, NAMED.findall(w.message)[0]) for w in warnings)
    assert found == (_keyed_expected if keyed else _keyless_expected)(plan, deciding)
    emitted = [p for p in plan if p["emitted"]]
    assert calls.emitted == len(emitted)
    matched = [p for p in emitted if p["requested"] == "same" and p["decision"] != "none"]
    assert calls.reconciled == len(matched)
    if not keyed:
        assert calls.decided == len(matched)
