"""A credential from its source's text (docs/loop.md#credentials): trimmed, or reached by an RFC 6901 pointer; and the
decisions of the Secret Service source: which session bus, which item."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
from returns.result import Failure, Result, Success


def resolve_pointer(document: Any, pointer: str) -> Any | None:
    """The value at an RFC 6901 pointer, or ``None`` when the pointer reaches nothing."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        return None
    value = document
    for token in pointer[1:].split("/"):
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and (key == "0" or not key.startswith("0")) and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def credential_from_text(text: str, pointer: str | None, where: str) -> Result[str, str]:
    """The trimmed credential, or why there is none; ``where`` names the source, never the value."""
    if pointer is None:
        value = text.strip()
        return Success(value) if value else Failure(f"the credential at {where} is empty")
    try:
        document = msgspec.json.decode(text.encode())
    except msgspec.DecodeError:
        return Failure(f"the credential at {where} is not a JSON document, so --oauth-token-pointer cannot reach it")
    found = resolve_pointer(document, pointer)
    if not isinstance(found, str) or not found.strip():
        return Failure(f"the pointer `{pointer}` does not reach a non-empty string in the credential at {where}")
    return Success(found.strip())


SECRET_SERVICE_LABEL = "b10x-harness"
SESSION_BUS_VARIABLE = "DBUS_SESSION_BUS_ADDRESS"
RUNTIME_DIR_VARIABLE = "XDG_RUNTIME_DIR"


def secret_item_attributes(name: str) -> dict[str, str]:
    """The attributes that identify key ``name`` in the Secret Service (docs/loop.md#credentials)."""
    return {"service": SECRET_SERVICE_LABEL, "name": name}


def runtime_bus_path(environment: Mapping[str, str]) -> str | None:
    """``$XDG_RUNTIME_DIR/bus``, the conventional session bus socket, when the variable is set."""
    runtime = environment.get(RUNTIME_DIR_VARIABLE, "")
    return f"{runtime.rstrip('/')}/bus" if runtime else None


def session_bus_address(environment: Mapping[str, str], runtime_bus_is_socket: bool, where: str) -> Result[str, str]:
    """The session bus the store client dials: ``DBUS_SESSION_BUS_ADDRESS``, else ``unix:path=$XDG_RUNTIME_DIR/bus``
    when that socket exists (the two variables metaharness forwards, docs/hermetic.md#credentials); else why there
    is none."""
    address = environment.get(SESSION_BUS_VARIABLE, "")
    if address:
        return Success(address)
    socket_path = runtime_bus_path(environment)
    if socket_path is not None and runtime_bus_is_socket:
        return Success(f"unix:path={socket_path}")
    runtime = f"{socket_path} is not a socket" if socket_path is not None else f"{RUNTIME_DIR_VARIABLE} is unset"
    return Failure(f"{where}: no session bus to reach the Secret Service ({SESSION_BUS_VARIABLE} is unset and {runtime})")


def choose_secret_item(items: Sequence[tuple[str, bool]], name: str, where: str) -> Result[str, str]:
    """The one matching item's path, given every match as ``(path, locked)``; zero or several matches and a
    locked item are refused by name, since the loop never prompts to unlock (docs/loop.md#credentials)."""
    described = ", ".join(f"{key}={value}" for key, value in secret_item_attributes(name).items())
    if not items:
        return Failure(f"{where}: no Secret Service item has the attributes {described}")
    if len(items) > 1:
        return Failure(f"{where}: {len(items)} Secret Service items have the attributes {described}; exactly one must")
    [(path, locked)] = items
    if locked:
        return Failure(f"{where}: the Secret Service item is in a locked collection; unlock it first (b10x-harness never prompts)")
    return Success(path)
