"""The pre-flight of ``--model-endpoint`` (docs/cli.md#the-endpoint-pre-flight): the address a TCP
connect is tried at before the spawn, and the refusal ``endpoint-unreachable`` when nothing answers."""

from __future__ import annotations

from urllib.parse import urlsplit

from metaharness.pure.refusal import Refusal

DEFAULT_PORTS = {"http": 80, "https": 443}


def endpoint_address(url: str) -> tuple[str, int] | None:
    """The host and port ``url`` names (the scheme's port when none is written); none for a URL with no
    host, a port that is not a number or a host that does not parse (the option stages refuse those first)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return parts.hostname, port if port is not None else DEFAULT_PORTS.get(parts.scheme, 80)


def endpoint_unreachable(url: str, address: tuple[str, int], reason: str) -> Refusal:
    """Nothing accepted a connect at ``address``, so the harness would only have retried in silence."""
    host, port = address
    return Refusal(
        "endpoint-unreachable",
        f"--model-endpoint {url}: nothing accepts a connection at {host}:{port} ({reason}), so no harness was "
        "started; start the endpoint or correct the URL (metaharness doctor KIND --model-endpoint URL checks it)",
    )
