"""The registry's adapters agree with each other and with the stages that read them."""

from __future__ import annotations

import pytest
from returns.result import Failure

from metaharness.pure.adapter import ReplayRequest
from metaharness.pure.adapters import adapter_of
from metaharness.pure.capabilities import descriptor
from metaharness.pure.environment import EnvironmentDeclaration, credential_posture
from metaharness.pure.kind import KINDS, Kind
from metaharness.pure.modes import DecisionMode
from metaharness.pure.options import RunOptions, check_kind_carriage


@pytest.mark.parametrize("kind", KINDS)
def test_a_kind_without_a_loopback_proxy_refuses_loopback_in_both_stages(kind: Kind) -> None:
    """Stage 3 refuses ``--credentials loopback`` exactly where the adapter has no loopback facts, and the
    credential posture, reached without stage 3 (a library caller), refuses it in the same words."""
    adapter = adapter_of(kind)
    carriage = check_kind_carriage(RunOptions(kind=kind, credentials="loopback", decisions="observe",
                                              given=frozenset({"credentials"})))
    posture = credential_posture(EnvironmentDeclaration(kind, "loopback"), {}, False)
    if adapter.loopback is None:
        assert isinstance(carriage, Failure) and isinstance(posture, Failure)
        assert posture.failure() == carriage.failure()
        assert posture.failure().code == "credentials-not-carried"
    else:
        assert not isinstance(carriage, Failure) and not isinstance(posture, Failure)


@pytest.mark.parametrize("kind", KINDS)
def test_the_descriptor_states_the_adapters_pins_and_rendering(kind: Kind) -> None:
    adapter = adapter_of(kind)
    stated = descriptor(kind)
    assert (stated.adapter.id, stated.versions_pinned) == (kind, adapter.pins)
    assert {op: tool for op, tool in stated.rendering.items() if tool is not None} == dict(adapter.descriptor.rendering)


@pytest.mark.parametrize("kind", [kind for kind in KINDS if adapter_of(kind).loopback is not None])
def test_a_custody_file_nested_past_the_decoders_depth_is_unreadable(kind: Kind) -> None:
    loopback = adapter_of(kind).loopback
    assert loopback is not None
    refused = loopback.custody_token(b"[" * 100_000 + b"]" * 100_000)
    assert isinstance(refused, Failure) and refused.failure().code == "loopback-custody-unreadable"


def test_a_replay_attests_ask_as_observe_since_nothing_answers_offline() -> None:
    modes: tuple[DecisionMode, ...] = ("frame", "ask", "observe")
    attested = [ReplayRequest(decisions=mode, transcript_path="r").attested_decisions for mode in modes]
    assert attested == ["frame", "observe", "observe"]
