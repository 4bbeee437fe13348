"""A call id's presentations and denials kept as persistent maps keyed by the presentation (pure/witness.py's
``Presentations`` and ``Denials``, docs/decisions.md#the-route-witness) answer as the tuples they replaced, which
grew by a copy each time one id was presented again: a model of those tuples, fed the same random requests and
decisions over a few ids and inputs that differ in the ways ``==`` sees through (``1``, ``1.0``, ``true``; the
order of an object's keys; a list against an object), holds the same presentations and denials in the same order,
finds the same presentations among them (and their twins), names the same latest one, and lifts a deny on the same input."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from metaharness.pure.events import Allow, Deny, Event, ToolDecided, ToolRequested
from metaharness.pure.witness import Presentation, StreamAccount, observe_event

IDS = st.sampled_from(["c0", "c1", "c2"])
SCALARS = st.one_of(st.none(), st.booleans(), st.sampled_from([0, 1, 2, 0.0, 1.0, 2.5, "a", "b"]))
INPUTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["x", "y", "z"]), inner, max_size=3),
    max_leaves=6,
)
PRESENTATIONS = st.builds(Presentation, st.sampled_from(["Bash", "Read"]), INPUTS)


def requested(call_id: str, presented: Presentation) -> ToolRequested:
    return ToolRequested(call_id=call_id, name=presented.name, input=presented.input, decision_required=True,
                         deadline_ms=1, seam="hook")  # fmt: skip


def decided(call_id: str, denied: bool) -> ToolDecided:
    return ToolDecided(call_id=call_id, decision=Deny("no") if denied else Allow(), decided_by="embedder", seam="hook",
                       latency_ms=1)  # fmt: skip


EVENTS = st.lists(
    st.one_of(
        st.tuples(IDS, PRESENTATIONS).map(lambda pair: requested(*pair)),
        st.tuples(IDS, st.booleans()).map(lambda pair: decided(*pair)),
    ),
    max_size=30,
)

def twin(value: Any) -> Any:
    """A value ``==`` finds equal to ``value`` but built otherwise: ``true`` as ``1``, ``1`` as ``1.0``, ``1.0``
    as ``1``, an object's keys in the other order."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: twin(value[key]) for key in reversed(value)}
    if isinstance(value, list):
        return [twin(item) for item in value]
    return value


Model = tuple[dict[str, tuple[Presentation, ...]], dict[str, tuple[tuple[Presentation | None, str], ...]]]


def modelled(model: Model, payload: Event) -> Model:
    """The tuples as ``observe_event`` kept them before: each distinct presentation appended, each deny
    appended with the id's latest distinct presentation."""
    requests, denials = model
    if isinstance(payload, ToolRequested):
        seen = requests.get(payload.call_id, ())
        presented = Presentation(payload.name, payload.input)
        return ({**requests, payload.call_id: seen if presented in seen else (*seen, presented)}, denials)
    if isinstance(payload, ToolDecided) and isinstance(payload.decision, Deny):
        last = (requests.get(payload.call_id) or (None,))[-1]
        return requests, {**denials, payload.call_id: (*denials.get(payload.call_id, ()), (last, payload.decision.reason))}
    return model


@given(EVENTS, st.lists(PRESENTATIONS, max_size=4))
def test_the_persistent_presentations_answer_as_the_tuples_did(events: list[Event], probes: list[Presentation]) -> None:
    stream, model = StreamAccount(), ({}, {})
    for payload in events:
        stream, model = observe_event(stream, payload), modelled(model, payload)
        requests, denials = model
        for call_id in ("c0", "c1", "c2"):
            seen, kept = requests.get(call_id, ()), stream.requested.get(call_id)
            assert (list(kept) if kept is not None else []) == list(seen)
            assert (kept.latest() if kept is not None else None) == (seen or (None,))[-1]
            answered, held = denials.get(call_id, ()), stream.denied.get(call_id)
            assert (list(held) if held is not None else []) == list(answered)
            for probe in (*probes, *seen, *(Presentation(one.name, twin(one.input)) for one in seen)):
                assert (kept is not None and probe in kept) == (probe in seen)
                old: Any = all(denied == probe for denied, _ in answered or ((None, ""),))
                assert (held is not None and held.all_answered(probe)) == old
