"""The ``--api-key-secret NAME`` source (docs/loop.md#credentials): the freedesktop Secret Service over the session bus.

The loop dials the session bus named by ``DBUS_SESSION_BUS_ADDRESS`` (else ``$XDG_RUNTIME_DIR/bus``), searches
every collection for the one item whose attributes are ``service=b10x-harness``, ``name=NAME``, and reads its
secret through an encrypted Secret Service session (``secretstorage`` over ``jeepney``). It never unlocks and so
never prompts. Every failure is one reason naming the source and never the value: the client missing, no bus,
the bus unreachable, no Secret Service on it, an error answer, a locked item, zero or several matches, a value
not UTF-8.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from contextlib import closing

from returns.result import Failure, Result, Success

from metaharness.pure.loop.credential import (
    choose_secret_item,
    runtime_bus_path,
    secret_item_attributes,
    session_bus_address,
)


def _is_socket(path: str | None) -> bool:
    try:
        return path is not None and stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def read_secret_store(name: str, environment: Mapping[str, str]) -> Result[str, str]:
    """The text of the Secret Service item for key ``name``, or why it cannot be had."""
    where = f"--api-key-secret {name}"
    try:
        import secretstorage
        from jeepney import DBusErrorResponse
        from jeepney.io.blocking import open_dbus_connection
    except ImportError:
        return Failure(f"{where} needs the Secret Service client `secretstorage`, which is not installed")
    address = session_bus_address(environment, _is_socket(runtime_bus_path(environment)), where)
    if isinstance(address, Failure):
        return address
    try:
        connection = open_dbus_connection(bus=address.unwrap())
    except (OSError, ValueError, RuntimeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        return Failure(f"{where}: the session bus at {address.unwrap()} cannot be reached: {reason}")
    with closing(connection):
        try:
            found = list(secretstorage.search_items(connection, secret_item_attributes(name)))
            chosen = choose_secret_item([(item.item_path, item.is_locked()) for item in found], name, where)
            if isinstance(chosen, Failure):
                return chosen
            [item] = [item for item in found if item.item_path == chosen.unwrap()]
            raw = item.get_secret()
        except secretstorage.SecretServiceNotAvailableException as error:
            return Failure(f"{where}: no Secret Service answers on the session bus: {error}")
        except (secretstorage.SecretStorageException, DBusErrorResponse) as error:
            answered = error.name if isinstance(error, DBusErrorResponse) else type(error).__name__
            return Failure(f"{where}: the Secret Service refused the read: {answered}")
        except (OSError, ValueError) as error:
            return Failure(f"{where}: the session bus failed during the read: {type(error).__name__}")
    try:
        return Success(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return Failure(f"{where} is not UTF-8")
