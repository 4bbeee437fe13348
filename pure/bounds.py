"""The bounds on what a harness, a model or an embedder can make metaharness read: every input has a
named size bound applied before its bytes are held, and every JSON value a nesting bound checked before
it is decoded, so no input of any size or depth raises.

A line past its size bound is read as its first bytes only, which no reader parses, so it takes the
reader's named outcome for an unreadable line (an ``opaque`` record, a ``MALFORMED`` command, a refused
request); a value nested past ``JSON_DEPTH_LIMIT`` takes the same outcome.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

JSON_DEPTH_LIMIT = 128
"""Arrays and objects nested in one JSON value; deeper is refused before decoding (Python's own
recursion would fail somewhere past ~900, in the decoder or in any later walk of the value)."""

RECORD_LINE_LIMIT = 16 * 1024 * 1024
"""Bytes of one record line (transcript, rollout, loop record) kept; the rest of the line is skipped."""

HOOK_REQUEST_LIMIT = 16 * 1024 * 1024
"""Bytes of one hook request file read; a longer request is refused as unreadable."""

COMMAND_LINE_LIMIT = 4 * 1024 * 1024
"""Bytes of one ``metaharness.command/1`` line on stdin (and of one ``mcp-serve`` message) kept."""

FRAME_FILE_LIMIT = 4 * 1024 * 1024
"""Bytes of a ``--frame`` document (or a ``frame.set`` body) read; a larger one is refused."""

INPUT_FILE_LIMIT = 128 * 1024 * 1024
"""Bytes of a ``replay`` or ``project`` input read (a file or a pipe); a larger one is refused unread past
that."""

PLAN_FILE_LIMIT = 16 * 1024 * 1024
"""Bytes of a ``metaharness-eval`` plan read (its tasks' prompts inline); a larger one is ``plan-unreadable``
with no more than that held."""

HOOKS_FILE_LIMIT = 1024 * 1024
"""Bytes of a b10x ``--hooks`` file read to find the programs its view must hold; from a larger one none
are bound (the loop reads the file itself)."""

CREDENTIAL_FILE_LIMIT = 1024 * 1024
"""Bytes of a custody credential file (``auth.json``, ``.credentials.json``) read; a larger one is
unreadable."""

PLUGIN_MANIFEST_LIMIT = 1024 * 1024
"""Bytes of a plugin copy's ``.claude-plugin/plugin.json`` read for row H1a; a larger one names no plugin."""

GIT_INDEX_LIMIT = 256 * 1024 * 1024
"""Bytes of git's index read for ``--context``; a larger index (or one that is no regular file) counts
as no index, so the files are untracked."""

GIT_SMALL_FILE_LIMIT = 1024 * 1024
"""Bytes of a gitfile, ``commondir`` or git ``config`` read; a larger one (or no regular file) is ignored."""

CHECKED_FILE_LIMIT = 64 * 1024 * 1024
"""Bytes of a workspace file an eval ``file`` check reads after the run; a larger one fails its check
unread (a run's checked files are notes and sources, never this large)."""

RESULT_FILE_LIMIT = 16 * 1024 * 1024
"""Bytes of a run's ``result.json`` that ``metaharness-eval --resume`` reads from the out directory; a
larger one (a result is a few kilobytes of checks) does not decode, so its run is done again."""

SANDBOX_ENTRY_LIMIT = 256
"""Entries of a codex turn's file-system grant read to attribute its sandbox's refusals; a grant with more
attributes none (docs/adapters/codex.md#sandbox-refusals)."""

UNREAD_KEY_LIMIT = 16
"""Doorbell keys with no request file the stream names one by one (``COVERAGE_GAP`` each); the hook writes
its request before it rings, so such a key is a tool's: past this many, one ``DOORBELL_FLOODED`` and
silence, so a flood costs neither the stream nor the run loop (docs/adapters/common.md#child-trees)."""



_STRING = re.compile(rb'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)', re.DOTALL)
"""A JSON string, or an unterminated one to the end of the text: every match attempt from a quote
succeeds without backtracking, so setting strings aside is linear however the quotes are escaped."""
_INNERMOST = re.compile(rb"\[\]")
_BRACKETS_ONLY = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")


def _nesting_exceeds(brackets: bytes, limit: int) -> bool:
    for peeled in range(limit + 1):
        inner = _INNERMOST.sub(b"", brackets)
        if inner == brackets:
            return peeled + brackets.count(b"[") > limit
        brackets = inner
    return True


def too_deep(raw: bytes, limit: int = JSON_DEPTH_LIMIT) -> bool:
    """Whether the JSON text ``raw`` nests arrays and objects more than ``limit`` deep (brackets inside
    strings do not count; an opener never closed counts as open to the end). At once when ``raw``
    holds at most ``limit`` openers; else linear in ``raw`` for each level peeled, strings set aside
    only when counting their brackets too would exceed the limit."""
    if len(raw) <= limit or raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    if not _nesting_exceeds(raw.translate(_BRACKETS_ONLY, _NOT_BRACKETS), limit):
        return False
    return _nesting_exceeds(_STRING.sub(b"", raw).translate(_BRACKETS_ONLY, _NOT_BRACKETS), limit)


def decode_bounded(raw: bytes | str) -> Any:
    """``msgspec.json.decode(raw)``, a value nested past ``JSON_DEPTH_LIMIT`` refused with the
    decoder's own error, so every caller's outcome for an unreadable document applies to it."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if too_deep(data):
        raise msgspec.DecodeError(f"JSON nested deeper than {JSON_DEPTH_LIMIT} arrays and objects")
    return msgspec.json.decode(raw)


class _Duplicate(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _unique_pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping: dict[str, Any] = {}
    for key, value in items:
        if key in mapping:
            raise _Duplicate(key)
        mapping[key] = value
    return mapping


def first_duplicate_key(raw: bytes | str) -> str | None:
    """The first key that appears twice in one object of the JSON text ``raw`` (which the decoder has
    already read, so it is JSON nested within ``JSON_DEPTH_LIMIT``), or ``None``: a decoder keeps only
    the last copy of such a key, so a document that holds two is refused rather than half-read."""
    try:
        json.loads(raw, object_pairs_hook=_unique_pairs)
    except _Duplicate as duplicate:
        return duplicate.key
    except ValueError:
        return None
    return None


CALL_MEMORY_LIMIT = 1024
"""Calls one generation of a per-call memory holds (the desk's correlation keys, the b10x answers written,
codex's announced calls and their completions, claude's usage per message): a record's state stays bounded
in its length, holding between this many and twice this many closed calls, and a call id presented again
after that many later calls is read as a new call (docs/events.md#replay, docs/decisions.md#correlation-and-abandonment).
Calls still open are never forgotten."""

PROBE_BANNER_LIMIT = 4096
"""Bytes of a version probe's stdout kept (gemini's probe beside its spawn, docs/adapters/gemini.md#version-probe):
a version banner is one short line, and a probe that prints more cannot grow metaharness's memory."""
