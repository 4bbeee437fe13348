"""Minimal client-side sessions (docs/loop.md#sessions): one JSON file per run, written atomically, 0600 in 0700."""

from __future__ import annotations

import os
from collections.abc import Mapping

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.jsonline import compact
from metaharness.pure.wires.neutral import Item, Usage


class SessionFile(msgspec.Struct, frozen=True):
    """The stored session; no credential, no instruction."""

    version: int
    id: str
    wire: str
    model: str
    base_url: str
    workspace: str
    created_unix: int
    updated_unix: int
    turns: int
    items: tuple[Item, ...]
    usage: tuple[Usage, ...]


def session_dir(explicit: str | None, environment: Mapping[str, str]) -> Result[str, str]:
    """``--session-dir``, else ``$XDG_STATE_HOME/b10x-harness/sessions``, else under ``$HOME``."""
    if explicit is not None:
        return Success(explicit)
    if environment.get("XDG_STATE_HOME"):
        return Success(os.path.join(environment["XDG_STATE_HOME"], "b10x-harness", "sessions"))
    if environment.get("HOME"):
        return Success(os.path.join(environment["HOME"], ".local", "state", "b10x-harness", "sessions"))
    return Failure("no session directory: pass --session-dir, set XDG_STATE_HOME or HOME, or pass --no-session")


def session_id(start_nanos: int, pid: int) -> str:
    """``<start nanos:016x>-<pid:08x>``."""
    return f"{start_nanos:016x}-{pid:08x}"


def load_session(directory: str, wanted: str) -> Result[SessionFile, str]:
    """The session named ``wanted``, or the newest (``latest``: newest ``updated_unix``, then id), read by name
    from the operator's session directory when the loop starts, before any tool runs."""
    if wanted == "latest":
        found: list[SessionFile] = []
        try:
            names = os.listdir(directory)
        except OSError:
            names = []
        for name in names:
            if name.endswith(".json"):
                loaded = _read(os.path.join(directory, name))
                if isinstance(loaded, SessionFile):
                    found.append(loaded)
        if not found:
            return Failure(f"--resume latest: no session in {directory}")
        return Success(max(found, key=lambda s: (s.updated_unix, s.id)))
    if "/" in wanted or not wanted:
        return Failure(f"--resume {wanted}: not a session id")
    loaded = _read(os.path.join(directory, f"{wanted}.json"))
    if isinstance(loaded, str):
        return Failure(f"--resume {wanted}: {loaded}")
    return Success(loaded)


def _read(path: str) -> SessionFile | str:
    try:
        with open(path, "rb") as handle:
            return msgspec.json.decode(handle.read(), type=SessionFile)
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        return f"is not a session file ({error})"


def save_session(directory: str, session: SessionFile) -> str:
    """Write atomically (temp file, rename), dir 0700, file 0600; returns the path."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, f"{session.id}.json")
    temp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(compact(session) + b"\n")
    os.replace(temp, path)
    return path

