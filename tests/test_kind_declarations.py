"""What a kind declares in its own adapter, the shared stages read there and nowhere else
(docs/DEVELOPING.md#adding-a-fourth-kind): its steering commands, its route dialect or no route, its
defaults for ``--decisions`` and ``--credentials``, and no loopback without listing it as not carried.

Each test hands a shared stage a throwaway adapter value (b10x's, with one fact changed) in place of the
registry's, as a new kind's would be."""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

import msgspec
import pytest
from returns.result import Failure, Success

from metaharness.pure import capabilities, confinement, environment, options
from metaharness.pure.adapter import Adapter, Loopback
from metaharness.pure.adapters import adapter_of
from metaharness.pure.capabilities import descriptor
from metaharness.pure.confinement import model_route, route_dialect
from metaharness.pure.environment import EnvironmentDeclaration, credential_posture, loopback_custody_token
from metaharness.pure.kind import KINDS, Kind
from metaharness.pure.options import RunOptions, check_kind_carriage

B10X = adapter_of("b10x")


def stand_in(monkeypatch: pytest.MonkeyPatch, adapter: Adapter) -> None:
    """Every shared stage this module tests sees ``adapter`` for every kind."""
    for module in (capabilities, confinement, environment, options):
        monkeypatch.setattr(module, "adapter_of", lambda _kind: adapter)


def test_capabilities_states_only_the_commands_the_kinds_adapter_honours(monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in(monkeypatch, msgspec.structs.replace(
        B10X, descriptor=msgspec.structs.replace(B10X.descriptor, honoured_commands=frozenset({"halt"}))))  # fmt: skip
    commands = descriptor("b10x").commands
    assert commands["halt"] == "honoured"
    assert commands["tool.decide"] == commands["interrupt"] == {"refused": "UNSUPPORTED_CONTROL"}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_states_the_commands_its_adapter_honours(kind: Kind) -> None:
    stated = descriptor(kind).commands
    assert {name for name, status in stated.items() if status == "honoured"} == adapter_of(kind).descriptor.honoured_commands


def test_a_kind_without_loopback_facts_refuses_loopback_without_listing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``("credentials", "loopback")`` in ``not_carried_values`` and no ``Loopback``: both stages refuse it
    by name, in the same words (before: stage 3 passed it and the posture raised ``KeyError``)."""
    values = MappingProxyType({key: why for key, why in B10X.not_carried_values.items() if key != ("credentials", "loopback")})
    stand_in(monkeypatch, msgspec.structs.replace(B10X, not_carried_values=values))
    carriage = check_kind_carriage(RunOptions(kind="b10x", credentials="loopback", given=frozenset({"credentials"})))
    posture = credential_posture(EnvironmentDeclaration("b10x", "loopback"), {}, False)
    assert isinstance(carriage, Failure) and carriage.failure() == posture.failure()
    assert carriage.failure().code == "credentials-not-carried"
    assert carriage.failure().message == "--credentials loopback is not carried on b10x: it has no loopback credential proxy"
    assert loopback_custody_token("b10x", b'{"OPENAI_API_KEY":"k"}') == Failure(carriage.failure())


def test_a_kind_declares_its_route_dialect(monkeypatch: pytest.MonkeyPatch) -> None:
    """The route proxy speaks the dialect (the ``Loopback`` facts) the kind's adapter names for the route's
    first path: a vendor its own, the loop the wire's (Messages: claude's; Responses: codex's)."""
    claude, codex, gemini = (adapter_of(kind).loopback for kind in ("claude", "codex", "gemini"))
    assert (route_dialect("b10x", "/v1/messages"), route_dialect("b10x", "/v1/responses")) == (claude, codex)
    assert [route_dialect(kind, "/any") for kind in ("claude", "codex", "gemini")] == [claude, codex, gemini]
    dialect: Callable[[str], Loopback | None] = lambda _path: gemini
    stand_in(monkeypatch, msgspec.structs.replace(
        B10X, confinement=msgspec.structs.replace(B10X.confinement, route_dialect=dialect)))  # fmt: skip
    assert route_dialect("b10x", "/v1/messages") is gemini


def test_a_kind_with_no_route_dialect_has_no_confined_route(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind that declares no route is never handed one: a launch that needs a route is refused
    ``confine-route-unavailable``, and one that needs none has none."""
    stand_in(monkeypatch, msgspec.structs.replace(
        B10X, confinement=msgspec.structs.replace(B10X.confinement, route_dialect=None)))  # fmt: skip
    assert route_dialect("b10x", "/v1/messages") is None
    refused = model_route("b10x", "none", "http://127.0.0.1:9/v1", None, False, "openai-responses")
    assert isinstance(refused, Failure) and refused.failure().code == "confine-route-unavailable"
    assert "b10x has no confined model route; pass --confine off" in refused.failure().message
    assert model_route("b10x", "none", None, None, False) == Success(None)


def test_a_kind_declares_its_defaults_for_decisions_and_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind that carries neither ``frame`` nor ``operator-login`` names its own defaults: a run that leaves
    the options out gets them; one that gives the contract's defaults is refused them by name."""
    values = MappingProxyType({**B10X.not_carried_values, ("decisions", "frame"): "no frame",
                               ("credentials", "operator-login"): "no login"})  # fmt: skip
    rules = msgspec.structs.replace(B10X.run_rules, default_decisions="observe", default_credentials="none")
    stand_in(monkeypatch, msgspec.structs.replace(B10X, not_carried_values=values, run_rules=rules))
    left_out = check_kind_carriage(RunOptions(kind="b10x"))
    assert isinstance(left_out, Success)
    assert (left_out.unwrap().decisions, left_out.unwrap().credentials) == ("observe", "none")
    given = check_kind_carriage(RunOptions(kind="b10x", given=frozenset({"decisions"})))
    assert isinstance(given, Failure) and given.failure().code == "decisions-not-carried"


@pytest.mark.parametrize("kind", ["claude", "codex", "b10x", "gemini"])
def test_the_four_kinds_keep_the_contracts_defaults(kind: Kind) -> None:
    """claude, codex, b10x and gemini declare no defaults of their own: a run that leaves the options out is as
    before (gemini's left-out ``operator-login`` is still refused by name)."""
    rules = adapter_of(kind).run_rules
    assert (rules.default_decisions, rules.default_credentials) == ("frame", "operator-login")
