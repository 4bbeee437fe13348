"""Every ``gc=False`` struct in ``pure/`` cannot be part of a reference cycle: its fields are of types that
cannot refer back (docs/DEVELOPING.md#untracked-state), and the state holding it is untracked by the collector."""

from __future__ import annotations

import gc
import importlib
import pkgutil
import types
import typing
from typing import Any

import msgspec
from immutables import Map

import metaharness.pure
from metaharness.pure.correlation import Correlator, on_readings
from metaharness.pure.events import Deny, ToolDecided, ToolRequested, ToolResult, WarningRaised
from metaharness.pure.readings import Announced, Finished
from metaharness.pure.witness import (
    Denials,
    EmittedCall,
    Exchange,
    Presentation,
    Presentations,
    RouteAccount,
    SentResult,
    StreamAccount,
    observe_event,
    witness,
)

SCALARS = (str, int, bool, float, bytes, type(None), msgspec.UnsetType)
JSON_VALUES = {(EmittedCall, "input"), (Presentation, "input"), (ToolRequested, "input"), (ToolResult, "content"),
               (ToolResult, "tool_use_result"), (Presentations, "keys"), (Denials, "alike")}  # fmt: skip
"""The ``Any`` fields that hold a decoded JSON value (the wire's or the record's tool input, a tool's output) or
its hashable copy (a presentation's key in the witness)."""


def untracked_structs() -> list[type[msgspec.Struct]]:
    """Every struct class defined in ``pure/`` with the collector off."""
    found: dict[str, type[msgspec.Struct]] = {}
    for module in pkgutil.walk_packages(metaharness.pure.__path__, "metaharness.pure."):
        for value in vars(importlib.import_module(module.name)).values():
            struct = isinstance(value, type) and issubclass(value, msgspec.Struct) and value.__module__ == module.name
            if struct and value.__struct_config__.gc is False:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return list(found.values())


def refers_back(owner: type, field: str, hint: Any) -> list[str]:
    """The parts of ``hint`` through which a value could refer back to what holds it."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return [] if (owner, field) in JSON_VALUES else [f"{owner.__qualname__}.{field}: Any"]
    if origin in (tuple, typing.Union, types.UnionType, Map):
        return [part for arg in typing.get_args(hint) if arg is not Ellipsis for part in refers_back(owner, field, arg)]
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return [] if hint.__struct_config__.gc is False else [f"{owner.__qualname__}.{field}: {hint.__qualname__}"]
    return [] if hint in SCALARS else [f"{owner.__qualname__}.{field}: {hint!r}"]


def test_untracked_structs_hold_only_what_cannot_refer_back() -> None:
    structs = untracked_structs()
    assert {EmittedCall, SentResult, Presentation, ToolRequested, ToolResult, WarningRaised, Announced, Finished} <= set(structs)
    for struct in structs:
        hints = typing.get_type_hints(struct)
        assert [part for field in struct.__struct_fields__ for part in refers_back(struct, field, hints[field])] == []


def test_refers_back_names_a_field_that_could() -> None:
    class Tracked(msgspec.Struct):
        value: list[int]

    class Loose(msgspec.Struct, gc=False):
        value: Any
        held: tuple[Tracked, ...]
        items: list[int]

    hints = typing.get_type_hints(Loose, localns={"Tracked": Tracked})
    found = [part for field in Loose.__struct_fields__ for part in refers_back(Loose, field, hints[field])]
    assert found == [f"{Loose.__qualname__}.value: Any", f"{Loose.__qualname__}.held: {Tracked.__qualname__}",
                     f"{Loose.__qualname__}.items: list[int]"]  # fmt: skip


def requested(call_id: str) -> ToolRequested:
    return ToolRequested(call_id=call_id, name="Bash", input={"command": ["echo", {"k": call_id}]},
                         decision_required=True, deadline_ms=None, seam="hook")  # fmt: skip


def test_a_long_runs_witness_state_is_untracked() -> None:
    account, stream = RouteAccount(), StreamAccount()
    for k in range(50):
        call_id = f"toolu_{k}"
        presented = requested(call_id)
        stream = observe_event(observe_event(stream, presented), ToolDecided(
            call_id=call_id, decision=Deny("no"), decided_by="frame", seam="hook", latency_ms=0))  # fmt: skip
        sent = SentResult(call_id, True, "no")
        account = witness(account, Exchange((EmittedCall(call_id, "Bash", presented.input),), (sent,), None))
    gc.collect()
    gc.collect()  # a pass untracks a tuple once what it holds is untracked: a denial's pair at the first
    held = [*account.emitted.values(), *account.results.values(), *stream.requested.values(), *stream.denied.values()]
    assert len(held) == 200 and not any(gc.is_tracked(value) for value in held)
    assert not any(gc.is_tracked(one) for value in held for one in value)


def test_readings_held_behind_an_open_call_are_untracked() -> None:
    """Hostile: a record announcing a call no hook delivers holds every later reading until its end; none of
    them is walked by the collector."""
    correlator, _ = on_readings(Correlator(live=True), (Announced("open", requested("open")),))
    for k in range(50):
        result = ToolResult(exit_code=0, outcome_source=None, call_id=f"c{k}", is_error=False,
                            content={"lines": ["ok"]}, bytes=None, tool_use_result=None)  # fmt: skip
        correlator, _ = on_readings(correlator, (Announced(f"c{k}", requested(f"c{k}")), Finished(f"c{k}", result)))
    gc.collect()
    assert len(correlator.held) == 101 and not any(gc.is_tracked(held) for held in correlator.held.values())
