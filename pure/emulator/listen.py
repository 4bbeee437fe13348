"""The emulator process's start-up decisions (docs/loop.md#process-and-routes): the scenario by name, a loopback bind
address, and the one line announcing the base URL."""

from __future__ import annotations

import ipaddress

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.emulator.scenarios import SCENARIO_NAMES
from metaharness.pure.jsonline import compact
from metaharness.pure.refusal import Refusal


class Listen(msgspec.Struct, frozen=True):
    """What to serve: one scenario for the process's life, on a loopback address, port 0."""

    scenario: str
    host: str
    ipv6: bool


def plan_listen(scenario: str, host: str) -> Result[Listen, Refusal]:
    """Refuse an unknown scenario (``unknown-scenario``) or a host that is not a loopback IP literal
    (``non-loopback-host``); both exit 2."""
    if scenario not in SCENARIO_NAMES:
        return Failure(Refusal("unknown-scenario", f"`{scenario}` is not a scenario; known: {', '.join(SCENARIO_NAMES)}"))
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return Failure(Refusal("non-loopback-host", f"`{host}` is not an IP address; the emulator binds loopback only"))
    if not address.is_loopback:
        return Failure(Refusal("non-loopback-host", f"`{host}` is not a loopback address; the emulator binds loopback only"))
    return Success(Listen(scenario=scenario, host=str(address), ipv6=address.version == 6))


def announcement(listen: Listen, port: int) -> bytes:
    """``{"base_url":"http://127.0.0.1:<port>/v1","scenario":…}`` and a newline."""
    authority = f"[{listen.host}]" if listen.ipv6 else listen.host
    return compact({"base_url": f"http://{authority}:{port}/v1", "scenario": listen.scenario}) + b"\n"


def scenario_list() -> bytes:
    """``--list-scenarios``: the JSON list of names, loop scenarios first."""
    return compact(list(SCENARIO_NAMES)) + b"\n"
