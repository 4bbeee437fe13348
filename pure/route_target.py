"""Where a launch points its model route once the route proxy listens (docs/adapters/common.md#endpoint-route,
docs/confinement.md): a value the run's stages plan over, never read back from the attestation's prose."""

from __future__ import annotations

from typing import TypeAlias

import msgspec

from metaharness.pure.confinement import BRIDGE_PORT, bridge_url


class LoopbackPort(msgspec.Struct, frozen=True):
    """Under loopback: the port the child dials with its placeholder (the bridge's in a view, else the proxy's)."""

    port: str


class BridgeEndpoint(msgspec.Struct, frozen=True):
    """In a view with ``--model-endpoint``: the bridge's URL in the endpoint's place."""

    endpoint: str


class VendorAtBridge(msgspec.Struct, frozen=True):
    """In a view on the vendor's own API: the API's base URL variable pointed at the bridge."""


RouteTarget: TypeAlias = LoopbackPort | BridgeEndpoint | VendorAtBridge


def route_target(*, loopback: bool, confined: bool, model_endpoint: str | None, proxy_port: int | None) -> RouteTarget:
    """The route a launch is re-planned onto once its proxy listens on ``proxy_port`` (loopback on ``127.0.0.1``) or
    on the view's socket behind the bridge (``confined``)."""
    if loopback:
        return LoopbackPort(str(BRIDGE_PORT) if confined else str(proxy_port))
    if model_endpoint is not None:
        return BridgeEndpoint(bridge_url(model_endpoint))
    return VendorAtBridge()
