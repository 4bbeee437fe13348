"""The one run engine (docs/DEVELOPING.md#the-run-engine): where a launch points its route is a pure value, and
the stages 5–9 plumbing (early signals, scratch and proxy release, spawn failure, unexpected failure, the
wind-up's events) lives in ``shell/run_engine.py`` alone, the child's spawn in ``shell/live_engine.py`` alone."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from metaharness.pure.confinement import BRIDGE_PORT, bridge_url
from metaharness.pure.kind import KINDS
from metaharness.pure.route_target import BridgeEndpoint, LoopbackPort, VendorAtBridge, route_target
from metaharness.pure.run_end import spawn_failed

ROOT = Path(__file__).resolve().parent.parent
ENGINE_ONLY = {"end_unexpectedly", "spawned_group", "retain_copies", "remove_tree", "refuse", "reach_endpoint", "EarlySignal"}
"""What a kind's run program leaves to the engine (``EarlySignal`` only as the type it is handed)."""


def test_loopback_dials_the_bridge_in_a_view_and_the_proxy_outside_one() -> None:
    assert route_target(loopback=True, confined=True, model_endpoint=None, proxy_port=4711) == LoopbackPort(
        str(BRIDGE_PORT)
    )
    assert route_target(loopback=True, confined=False, model_endpoint="http://x/v1", proxy_port=4711) == LoopbackPort(
        "4711"
    )


def test_a_view_puts_the_bridge_in_the_endpoints_place_or_points_the_vendor_api_at_it() -> None:
    endpoint = "http://127.0.0.1:9/api/v1"
    assert route_target(loopback=False, confined=True, model_endpoint=endpoint, proxy_port=0) == BridgeEndpoint(
        bridge_url(endpoint)
    )
    assert route_target(loopback=False, confined=True, model_endpoint=None, proxy_port=0) == VendorAtBridge()


def test_spawn_failed_names_the_program_and_the_reason() -> None:
    refusal = spawn_failed("/bin/nothing", "No such file or directory")
    assert (refusal.code, refusal.message) == ("spawn-failed", "/bin/nothing could not be started: No such file or directory")


def _imported_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


@pytest.mark.parametrize("kind", KINDS)
def test_a_kinds_run_program_leaves_the_stage_plumbing_to_the_engine(kind: str) -> None:
    run = ROOT / "shell" / kind / "run.py"
    names = _imported_names(run)
    assert "run_kind" in names
    assert not (names & (ENGINE_ONLY - {"EarlySignal"})), names & ENGINE_ONLY


@pytest.mark.parametrize("kind", KINDS)
def test_a_kinds_live_loop_spawns_through_the_engine(kind: str) -> None:
    source = (ROOT / "shell" / kind / "live.py").read_text()
    assert "subprocess.Popen(" not in source and "LiveLoop" in source


def test_codex_app_server_spawns_and_ends_through_the_live_engine() -> None:
    """The catalogue run's two servers are started by the live engine's ``spawn`` and the app-server is ended by
    its ``ended``, as every kind's live loop (the engine's spawn-failed, signals and release cover them)."""
    source = (ROOT / "shell" / "codex" / "app_server.py").read_text()
    names = _imported_names(ROOT / "shell" / "codex" / "app_server.py")
    assert "subprocess.Popen(" not in source and {"spawn", "ended"} <= names
