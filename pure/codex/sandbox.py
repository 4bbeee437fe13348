"""Which calls codex's own sandbox refused, read from the record's structure, never from a tool's output
(docs/adapters/codex.md#sandbox-refusals).

Codex 0.171.0 states a sandbox refusal only in prose (``patch rejected: writing outside of the project``,
``Read-only file system``), which a tool can print as well. So a refusal is read from three facts a tool
does not write: the file-system grant of the turn (``turn_context.file_system_sandbox_policy``, written
by codex before any tool runs), the paths the call's ``file.write``/``file.edit``/``file.delete``
subjects name (from the call's input, resolved before it runs), and that codex recorded no successful
completion for it. A call metaharness allowed or abstained on that writes where the grant gives no write
access, and that did not succeed, was refused by codex. A shell command names no file subjects, so what
it prints is never read as a refusal, whichever layer ran it.
"""

from __future__ import annotations

import posixpath
from typing import Any

import msgspec
from immutables import Map

from metaharness.pure.bounds import SANDBOX_ENTRY_LIMIT
from metaharness.pure.events import Deny, Event, PermissionDenial, ToolDecided, ToolRequested, ToolResult

WRITING_OPERATIONS = frozenset({"file.write", "file.edit", "file.delete"})
"""The operations whose subjects the grant is checked against."""

PLACED_SPECIALS = ("root", "slash_tmp", "tmpdir")
"""The special entries a path is known for: ``/``, ``/tmp`` and the child's ``TMPDIR`` (when the launch
names it); a writable special of another kind leaves the grant unplaced, so nothing is attributed."""


class Grant(msgspec.Struct, frozen=True):
    """One entry of the grant: an absolute path and whether it may be written below."""

    path: str
    writable: bool


class SandboxGrant(msgspec.Struct, frozen=True):
    """The file-system grant of a turn: ``cwd`` to place relative paths, the entries (the longest
    enclosing one decides), or ``None`` entries when nothing is restricted."""

    cwd: str
    entries: tuple[Grant, ...] | None


def _entry_path(path: Any, tmpdir: str | None) -> str | None:
    """An entry's absolute path, ``None`` when the record does not place it."""
    if not isinstance(path, dict):
        return None
    named = path.get("path")
    if path.get("type") == "path" and isinstance(named, str) and named.startswith("/"):
        return posixpath.normpath(named)
    value = path.get("value")
    kind = value.get("kind") if path.get("type") == "special" and isinstance(value, dict) else None
    places = {"root": "/", "slash_tmp": "/tmp", "tmpdir": tmpdir}
    placed = places.get(kind) if isinstance(kind, str) and kind in PLACED_SPECIALS else None
    return posixpath.normpath(placed) if placed is not None and placed.startswith("/") else None


def sandbox_grant(turn_context: dict[str, Any], tmpdir: str | None) -> SandboxGrant | None:
    """The grant a ``turn_context`` states, or ``None`` when it states none that places every writable
    entry (an unknown special, a relative path, more than ``SANDBOX_ENTRY_LIMIT`` entries)."""
    policy, cwd = turn_context.get("file_system_sandbox_policy"), turn_context.get("cwd")
    if not isinstance(policy, dict) or not isinstance(cwd, str) or not cwd.startswith("/"):
        return None
    if policy.get("kind") == "unrestricted":
        return SandboxGrant(cwd=cwd, entries=None)
    entries = policy.get("entries")
    if policy.get("kind") != "restricted" or not isinstance(entries, list) or len(entries) > SANDBOX_ENTRY_LIMIT:
        return None
    grants: list[Grant] = []
    for entry in entries:
        if not isinstance(entry, dict):
            return None
        path, writable = _entry_path(entry.get("path"), tmpdir), entry.get("access") == "write"
        if path is None and writable:
            return None
        if path is not None:
            grants.append(Grant(path, writable))
    return SandboxGrant(cwd=posixpath.normpath(cwd), entries=tuple(grants))


def _below(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


def writable(grant: SandboxGrant, path: str) -> bool:
    """Whether the grant lets ``path`` (absolute, or relative to the turn's directory) be written: the
    longest entry enclosing it decides, and a path no entry encloses is not writable."""
    if grant.entries is None:
        return True
    where = posixpath.normpath(posixpath.join(grant.cwd, path))
    enclosing = [entry for entry in grant.entries if _below(where, entry.path)]
    return bool(enclosing) and max(enclosing, key=lambda entry: len(entry.path)).writable


def _written_paths(requested: ToolRequested) -> tuple[str, ...]:
    operations = requested.operations if isinstance(requested.operations, tuple) else ()
    subjects = requested.subjects if isinstance(requested.subjects, tuple) else ()
    if not WRITING_OPERATIONS.intersection(operations):
        return ()
    return tuple(subject.removeprefix("file:") for subject in subjects if subject.startswith("file:"))


class SandboxWatch(msgspec.Struct, frozen=True):
    """The calls codex's grant refuses, as the stream is written: each kept until metaharness denies it
    or codex records its success; numbered in the order refused (``next`` the next number) and indexed by call
    id, so noting one costs the same however many are kept (docs/DEVELOPING.md#rules-for-pure)."""

    refused: Map[int, PermissionDenial] = Map()
    by_call: Map[str, Map[int, bool]] = Map()
    next: int = 0


def watched(watch: SandboxWatch, grant: SandboxGrant | None, payload: Event) -> SandboxWatch:
    """``watch`` after one event of the stream, ``grant`` the turn's when it was written."""
    if isinstance(payload, ToolRequested) and grant is not None:
        if any(not writable(grant, path) for path in _written_paths(payload)):
            denial = PermissionDenial(tool_name=payload.name, tool_use_id=payload.call_id, tool_input=payload.input)
            numbers = watch.by_call.get(payload.call_id, Map()).set(watch.next, True)
            return SandboxWatch(watch.refused.set(watch.next, denial), watch.by_call.set(payload.call_id, numbers),
                                watch.next + 1)  # fmt: skip
        return watch
    cleared = (
        isinstance(payload, ToolDecided) and isinstance(payload.decision, Deny)
    ) or (isinstance(payload, ToolResult) and payload.is_error is False)
    if cleared and isinstance(payload, ToolDecided | ToolResult) and payload.call_id in watch.by_call:
        refused = watch.refused
        for number in watch.by_call[payload.call_id]:
            refused = refused.delete(number)
        return SandboxWatch(refused, watch.by_call.delete(payload.call_id), watch.next)
    return watch


def sandbox_denials(watch: SandboxWatch) -> tuple[PermissionDenial, ...] | None:
    """``session.ended.permission_denials`` of a codex run: the calls its sandbox refused, ``None`` when none."""
    return tuple(watch.refused[number] for number in sorted(watch.refused)) or None
