"""The event-driven hook channel, kind-agnostic (docs/adapters/common.md#hook-channel).

The scratch root holds ``hooks/pretooluse``, a ``bash`` program with its paths baked in that runs no other
program, and ``hook-channel/`` with ``ready/`` (wake FIFOs metaharness made, ``<key>.wake``), ``requests/``,
``responses/`` and the ``doorbell`` FIFO. Per call the program claims a key by creating
``requests/<key>.json`` exclusively, copies its stdin there, holds ``ready/<key>.wake`` open, rings the
doorbell with ``<key>\\n`` and blocks until metaharness writes one line to the wake FIFO (or its backstop
passes), then prints ``responses/<key>.json``. This module renders that program, reads a request as a
call and builds the shared ``PreToolUse`` answer envelope; the shell's hook channel makes the files and
does the waiting. The codex and gemini arms use it; each renders its own answer bodies.
"""

from __future__ import annotations

from typing import Any

import msgspec

from metaharness.pure.bounds import HOOK_REQUEST_LIMIT, decode_bounded
from metaharness.pure.budgets import BACKSTOP_MARGIN_S, DOORBELL_TIMEOUT_S, HOOK_TIMEOUT_S
from metaharness.pure.events import WarningRaised
from metaharness.pure.jsonline import compact
from metaharness.pure.refusal import Refusal

HOOK_PROGRAM = "hooks/pretooluse"
CHANNEL_DIR = "hook-channel"
REQUESTS_DIR = "hook-channel/requests"
RESPONSES_DIR = "hook-channel/responses"
DOORBELL = "hook-channel/doorbell"

NO_ANSWER_REASON = (
    "metaharness did not answer in time, so the hook denied this call by itself and the call did not run"
)
"""The deny reason the hook program prints on its own (channel missing, doorbell dead, backstop)."""

EMPTY_REASON = "metaharness denied this call and the embedder stated no reason; the call did not run"
"""The reason a deny with none gets on the wire (docs/adapters/common.md#answer-bodies)."""


def shell_quote(text: str) -> str:
    """``text`` as one single-quoted POSIX shell word (docs/adapters/common.md#vendor-launch-order: paths in a command
    string are single-quoted)."""
    return "'" + text.replace("'", "'\\''") + "'"


def pretooluse_answer(**fields: Any) -> bytes:
    """``E(x)`` of docs/adapters/common.md#vendor-decisions:
    ``{"hookSpecificOutput":{"hookEventName":"PreToolUse",x}}``, compact, no newline.

    ``fields`` are written in the order given after ``hookEventName``.
    """
    return compact({"hookSpecificOutput": {"hookEventName": "PreToolUse", **fields}})


def deny_answer(reason: str) -> bytes:
    """The deny body both vendors read (docs/adapters/common.md#vendor-decisions); an empty reason gets
    :data:`EMPTY_REASON`."""
    return pretooluse_answer(
        permissionDecision="deny", permissionDecisionReason=reason if reason.strip() else EMPTY_REASON
    )


def backstop_seconds(hook_timeout_s: int = HOOK_TIMEOUT_S) -> int:
    """How long the hook waits for an answer: the hook timeout − 3 s (docs/adapters/common.md#vendor-decisions:
    57 s)."""
    return hook_timeout_s - BACKSTOP_MARGIN_S


READY_SLOTS = 16
"""How many unclaimed wake FIFOs ``<key>.wake`` metaharness keeps in ``hook-channel/ready/``: one is made for each key rung, so only
more hooks than this at once between claim and doorbell find none (and deny)."""

REQUEST_CHARS = HOOK_REQUEST_LIMIT + 1
"""What the hook reads of its stdin (bytes, under ``LC_ALL=C``): one past the bound the host reads."""


def render_channel_program(
    scratch: str, deny_body: bytes, deny_exit: int, event: str, hook_timeout_s: int = HOOK_TIMEOUT_S
) -> str:
    """A ``bash`` hook program on the channel (docs/adapters/common.md#hook-channel) that runs no other
    program: built-ins only, every path without an answer printing ``deny_body`` and exiting ``deny_exit``.

    Per call it reads its stdin first (so no vendor ever writes to a hook that is gone), claims a wake FIFO
    metaharness made in ``ready/`` by creating ``requests/<key>.json`` under ``noclobber`` (``O_EXCL``),
    copies the request there, holds the FIFO and the doorbell open
    read-write (neither open blocks), rings ``<key>\\n`` and waits on the FIFO with ``read -t``. After
    ``DOORBELL_TIMEOUT_S`` with no wake it denies when its key still sits unread in the doorbell (nobody
    reads it), else it waits out the backstop. It parses no JSON.
    """
    channel = f"{scratch}/{CHANNEL_DIR}"
    first = min(DOORBELL_TIMEOUT_S, backstop_seconds(hook_timeout_s))
    rest = backstop_seconds(hook_timeout_s) - first
    wait = (
        f"if ! IFS= read -r -t {first} -u 3 woken; then\n  read -t 0 -u 4 && deny\n"
        f"  IFS= read -r -t {rest} -u 3 woken || deny\nfi\n"
        if rest > 0
        else f"IFS= read -r -t {first} -u 3 woken || deny\n"
    )
    return (
        "#!/bin/bash\n"
        f"# metaharness {event} hook: hands the call to the running metaharness and prints its answer.\n"
        "umask 077\n"
        "LC_ALL=C\n"
        f"channel={shell_quote(channel)}\n"
        f"deny() {{ printf '%s' {shell_quote(deny_body.decode())}; exit {deny_exit}; }}\n"
        + ("trap deny HUP INT TERM\n" if deny_exit else "")
        + f"IFS= read -r -N {REQUEST_CHARS} request\n"
        "set -o noclobber\n"
        "shopt -s nullglob\n"
        "key=\n"
        'for wake in "$channel"/ready/*.wake; do\n'
        "  key=${wake##*/}; key=${key%.wake}\n"
        '  { exec 5>"$channel/requests/$key.json"; } 2>/dev/null && break\n'
        "  key=\n"
        "done\n"
        '[ -n "$key" ] || deny\n'
        '{ exec 3<>"$wake"; } 2>/dev/null || deny\n'
        'printf \'%s\' "$request" >&5 || deny\n'
        "exec 5>&-\n"
        '{ exec 4<>"$channel/doorbell"; } 2>/dev/null || deny\n'
        'printf \'%s\\n\' "$key" >&4 || deny\n'
        f"{wait}"
        '[ -f "$channel/responses/$key.json" ] || deny\n'
        '{ exec 6<"$channel/responses/$key.json"; } 2>/dev/null || deny\n'
        "IFS= read -r -d '' -u 6 answer\n"
        'printf \'%s\' "$answer"\n'
        "exit 0\n"
    )


def render_hook_program(scratch: str, hook_timeout_s: int = HOOK_TIMEOUT_S) -> str:
    """The text of ``hooks/pretooluse`` for a scratch root (docs/adapters/common.md#vendor-decisions), mode 0700
    when written: the channel's program answering in the ``PreToolUse`` envelope, never exiting non-zero
    (exit 2 blocks on codex with its own reason)."""
    return render_channel_program(scratch, deny_answer(NO_ANSWER_REASON), 0, "PreToolUse", hook_timeout_s)


class HookCall(msgspec.Struct, frozen=True):
    """A hook request read as a call (docs/adapters/common.md#vendor-decisions).

    ``call_id`` is the request's ``tool_use_id``, or ``hook:<key>`` when it has none or does not
    parse; ``name`` is ``tool_name`` or ``""`` (so no frame admits a call it cannot read);
    ``input`` is ``tool_input`` (``None`` when absent). ``correlated`` says the id came from the request.
    ``cwd`` is the request's ``cwd``: on Codex 0.171.0 the directory the call runs in.
    """

    key: str
    call_id: str
    name: str
    input: Any
    correlated: bool
    cwd: str | None = None


class HookAnswer(msgspec.Struct, frozen=True):
    """Write ``body`` to the hook channel under ``key`` for ``call_id``."""

    call_id: str
    key: str
    body: bytes


UNREADABLE_REQUEST = (
    "metaharness could not read this hook request as a JSON object naming a tool, so it cannot tell what "
    "the call would do"
)
"""The deny reason, by ``adapter``, of a hook call whose request names no tool."""


def request_unreadable(call: HookCall) -> str | None:
    """``UNREADABLE_REQUEST`` for a call whose request named no tool (unreadable, nested too deep, cut
    at its bound), else ``None``."""
    return UNREADABLE_REQUEST if not call.name else None


def read_hook_request(key: str, raw: bytes) -> HookCall:
    """Read ``requests/<key>.json`` (``tool_use_id``, ``tool_name``, ``tool_input``) as a call
    (docs/adapters/common.md#vendor-decisions)."""
    try:
        document = decode_bounded(raw)
    except msgspec.DecodeError:
        document = None
    if not isinstance(document, dict):
        return HookCall(key, f"hook:{key}", "", None, False)
    tool_use_id = document.get("tool_use_id")
    name = document.get("tool_name")
    name = name if isinstance(name, str) else ""
    cwd = document.get("cwd") if isinstance(document.get("cwd"), str) else None
    if isinstance(tool_use_id, str) and tool_use_id:
        return HookCall(key, tool_use_id, name, document.get("tool_input"), True, cwd)
    return HookCall(key, f"hook:{key}", name, document.get("tool_input"), False, cwd)


KEY_LIMIT = 64
"""The longest key a doorbell line may name (metaharness makes sixteen hex digits)."""


def doorbell_keys(pending: bytes, received: bytes) -> tuple[tuple[str, ...], bytes]:
    """Split doorbell bytes into complete keys; the unterminated tail is carried to the next read.

    Each hook writes ``<key>\\n`` in one write under PIPE_BUF, so lines never interleave; empty lines
    are skipped. A tail longer than ``KEY_LIMIT`` is no key, so only its first ``KEY_LIMIT + 1`` bytes
    are carried (still too long when its line ends): a child writing without a newline grows nothing.
    """
    data = pending + received
    *lines, rest = data.split(b"\n")
    keys = tuple(line.decode("utf-8", "replace") for line in lines if line)
    return keys, rest[: KEY_LIMIT + 1]


def is_channel_key(key: str) -> bool:
    """A key a doorbell line may name: at most ``KEY_LIMIT`` characters, no path separator.

    The shell reads ``requests/<key>.json`` only for such keys, so a doorbell line can never name a
    file outside the channel.
    """
    return 0 < len(key) <= KEY_LIMIT and "/" not in key and key not in {".", ".."} and "\x00" not in key


HOOK_GAVE_UP = (
    "the hook gave up first: its own backstop denied this call before metaharness's answer reached it, "
    "so the call did not run"
)
"""The deadline's deny reason when the hook's own backstop answered first (docs/decisions.md#deadlines)."""


CHANNEL_REFUSED_REASON = (
    "metaharness could not hand its answer to the hook: a name in the hook channel was not what metaharness "
    "made, so the hook denied this call by itself and the call did not run"
)
"""The deny reason of a call whose answer met a refused name (docs/adapters/common.md#child-trees)."""


def channel_refused(key: str, refusal: Refusal) -> WarningRaised:
    """The ``CHANNEL_REFUSED`` warning of a hook answer that met a refused name (docs/events.md#warning-codes)."""
    return WarningRaised(
        code="CHANNEL_REFUSED",
        message=f"the answer for hook key {key} was not written: {refusal.message}; the call is denied",
    )
