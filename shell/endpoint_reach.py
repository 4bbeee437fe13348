"""The pre-flight connect to ``--model-endpoint`` before the spawn (docs/cli.md#the-endpoint-pre-flight):
one TCP connect from metaharness, closed at once, no request sent."""

from __future__ import annotations

from metaharness.pure.budgets import ENDPOINT_CONNECT_S
from metaharness.pure.endpoint import endpoint_address, endpoint_unreachable
from metaharness.pure.refusal import Refusal


def endpoint_refusal(endpoint: str | None) -> Refusal | None:
    """``endpoint-unreachable`` when a connect to the endpoint's host and port fails, ``model-endpoint-malformed``
    when it names none (``doctor`` checks no option first); none when it is accepted or no endpoint was given. ``socket`` is loaded here, at the pre-flight, so the stages before it start
    without it (docs/DEVELOPING.md#the-run-engine)."""
    import socket

    if endpoint is None:
        return None
    address = endpoint_address(endpoint)
    if address is None:
        return Refusal(
            "model-endpoint-malformed",
            f"--model-endpoint {endpoint}: it names no host and port a connection could be tried at",
        )
    try:
        with socket.create_connection(address, timeout=ENDPOINT_CONNECT_S):
            return None
    except OSError as error:
        return endpoint_unreachable(endpoint, address, error.strerror or str(error) or type(error).__name__)
