"""Claude Code's stdio control protocol, the in-band decision seam (docs/adapters/claude.md#in-band-decisions).

metaharness starts ``claude`` with stream-json on both pipes and ``--await-initialize``, writes one
``initialize`` request registering a ``PreToolUse`` callback for every tool (``onFailure:"block"``,
``timeout`` 60 s), checks the reply (:func:`check_initialize_reply`), then writes the user turn as a
user message. Every tool call then arrives on the CLI's stdout as a ``hook_callback`` request and is
answered on its stdin by a ``control_response``; a ``control_cancel_request`` withdraws one. This
module reads those lines (:func:`read_control`) and writes the answers; no I/O.
"""

from __future__ import annotations

import re
from typing import Any, TypeAlias

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.budgets import CALLBACK_TIMEOUT_S
from metaharness.pure.events import Abstain, Allow, Decision, Deny, Replace, WarningRaised
from metaharness.pure.hook_channel import EMPTY_REASON, HookCall, read_hook_request
from metaharness.pure.jsonline import compact
from metaharness.pure.refusal import Refusal

INITIALIZE_ID = "metaharness-initialize"
"""The ``request_id`` of metaharness's one ``initialize`` request."""

CALLBACK_ID = "metaharness-pretooluse"
"""The one ``hookCallbackIds`` entry: every ``hook_callback`` names it."""


CONFIRMATIONS = ("hooks_applied", "hook_on_failure_supported")
"""The ``initialize`` reply's fields that must both be ``true`` before the turn is sent."""

CLI_GAVE_UP = (
    "Claude Code gave up first: it withdrew this call's hook request (control_cancel_request) before "
    "metaharness's answer reached it, so the call did not run"
)
"""The deadline's deny reason when the CLI withdrew the request before the answer (docs/decisions.md#deadlines)."""


class HookCallback(msgspec.Struct, frozen=True):
    """A ``hook_callback`` request read as a call; ``call.key`` is its ``request_id``."""

    call: HookCall
    agent_id: str | None = None


class Withdrawn(msgspec.Struct, frozen=True):
    """A ``control_cancel_request``: the CLI stopped waiting for ``request_id``."""

    request_id: str


class Reply(msgspec.Struct, frozen=True):
    """A ``control_response`` on the CLI's stdout: the ``initialize`` reply, or (``--replay-user-messages``) the
    echo of one its stdin carried; ``body`` is its ``response`` member, compact."""

    request_id: str
    raw: bytes
    body: bytes


class Unserved(msgspec.Struct, frozen=True):
    """A control request of a subtype metaharness does not serve: answered with an error."""

    request_id: str
    subtype: str


ControlLine: TypeAlias = HookCallback | Withdrawn | Reply | Unserved


def input_forged(what: str) -> WarningRaised:
    """``INPUT_FORGED``: the CLI's stdout shows a line on its stdin that metaharness never wrote."""
    return WarningRaised(
        code="INPUT_FORGED",
        message=f"Claude Code's stdin carried {what} that metaharness never wrote: something else can write to it",
    )


def forged_reply(reply: Reply) -> WarningRaised:
    """A ``control_response`` on stdout that is neither the ``initialize`` reply nor the echo of an answer
    metaharness wrote: a forged answer, or the CLI's answer to a forged control request."""
    return input_forged(f"a control response or request for {reply.request_id or 'no request_id'}")


def replayed_turn(raw: bytes) -> Any | None:
    """The content of a user message the CLI echoed from its stdin (``isReplay``), ``None`` for any other line."""
    if b'"isReplay":true' not in raw:
        return None
    try:
        document = decode_bounded(raw)
    except msgspec.DecodeError:
        return None
    if not isinstance(document, dict) or document.get("type") != "user" or document.get("isReplay") is not True:
        return None
    message = document.get("message")
    return message.get("content") if isinstance(message, dict) else None


def initialize_line(timeout_s: int = CALLBACK_TIMEOUT_S) -> bytes:
    """The ``initialize`` request, one line with its ``\\n``: one blocking ``PreToolUse`` callback for every
    tool, which the CLI gives ``timeout_s`` (docs/adapters/claude.md#in-band-decisions)."""
    matcher = {"matcher": "", "hookCallbackIds": [CALLBACK_ID], "timeout": timeout_s, "onFailure": "block"}
    request = {"subtype": "initialize", "hooks": {"PreToolUse": [matcher]}}
    return compact({"type": "control_request", "request_id": INITIALIZE_ID, "request": request}) + b"\n"


def user_message_line(turn: str) -> bytes:
    """The user turn as a stream-json user message, one line with its ``\\n``."""
    message = {"role": "user", "content": turn}
    return compact({"type": "user", "message": message, "parent_tool_use_id": None, "session_id": ""}) + b"\n"


def check_initialize_reply(raw: bytes) -> Result[None, Refusal]:
    """``hooks-unconfirmed`` unless the reply to :data:`INITIALIZE_ID` is a success whose
    ``hooks_applied`` and ``hook_on_failure_supported`` are both ``true``."""
    try:
        document = decode_bounded(raw)
    except msgspec.DecodeError:
        document = None
    response = document.get("response") if isinstance(document, dict) else None
    body = response.get("response") if isinstance(response, dict) else None
    if not isinstance(response, dict) or response.get("subtype") != "success" or not isinstance(body, dict):
        error = response.get("error") if isinstance(response, dict) else None
        said = f": {error}" if isinstance(error, str) else ""
        return Failure(Refusal("hooks-unconfirmed", f"Claude Code did not accept initialize{said}"))
    missing = [name for name in CONFIRMATIONS if body.get(name) is not True]
    if missing:
        return Failure(
            Refusal(
                "hooks-unconfirmed",
                f"Claude Code's initialize reply does not say {' and '.join(n + ': true' for n in missing)}, so a "
                "call could run without metaharness's decision",
            )
        )
    return Success(None)


_OPENING = 96
"""A control message names its ``type`` within its first bytes; a line that does not is a record."""
_REQUEST_OPENING = re.compile(rb'\A\s*\{\s*"type"\s*:\s*"control_request"\s*,\s*"request_id"\s*:\s*"([^"\\]{1,256})"')


def read_control(raw: bytes) -> ControlLine | None:
    """One stdout line read as a control message, ``None`` when it is a record (or no JSON object). A control
    request that does not decode (nested too deep, cut at the line bound) whose ``request_id`` its opening
    still names is a callback naming no tool, so it is answered, denied."""
    if b'"control_' not in raw[:_OPENING]:
        return None
    try:
        document = decode_bounded(raw)
    except msgspec.DecodeError:
        return _unreadable(raw)
    if not isinstance(document, dict):
        return None
    kind, request_id = document.get("type"), document.get("request_id")
    if kind == "control_cancel_request" and isinstance(request_id, str):
        return Withdrawn(request_id)
    if kind == "control_response":
        response = document.get("response")
        answered = response.get("request_id") if isinstance(response, dict) else None
        return Reply(answered if isinstance(answered, str) else "", raw, compact(response))
    request = document.get("request")
    if kind != "control_request" or not isinstance(request_id, str) or not isinstance(request, dict):
        return None
    subtype = request.get("subtype")
    if subtype != "hook_callback" or request.get("callback_id") != CALLBACK_ID:
        return Unserved(request_id, subtype if isinstance(subtype, str) else "")
    return _callback(request_id, request)


def _unreadable(raw: bytes) -> HookCallback | None:
    """The callback of an undecodable control request, by the ``request_id`` its first bytes spell."""
    opening = _REQUEST_OPENING.match(raw)
    if opening is None:
        return None
    key = opening.group(1).decode("utf-8", "replace")
    return HookCallback(HookCall(key, f"hook:{key}", "", None, False))


def _callback(request_id: str, request: dict[str, Any]) -> HookCallback:
    """The callback's ``input`` read as a hook request; the request's own ``tool_use_id`` when the input has none."""
    hook_input = request.get("input")
    if isinstance(hook_input, dict) and "tool_use_id" not in hook_input and isinstance(request.get("tool_use_id"), str):
        hook_input = {**hook_input, "tool_use_id": request["tool_use_id"]}
    call = read_hook_request(request_id, compact(hook_input))
    agent = hook_input.get("agent_id") if isinstance(hook_input, dict) else None
    return HookCallback(call, agent if isinstance(agent, str) else None)


def hook_output(decision: Decision) -> dict[str, Any]:
    """The callback's answer for a decision (docs/adapters/common.md#answer-bodies): allow and replace as
    ``permissionDecision:"allow"`` (replace with ``updatedInput``), deny with a non-empty reason, abstain as
    ``{}`` (the CLI's own headless rule decides)."""
    if isinstance(decision, Abstain):
        return {}
    fields: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if isinstance(decision, Allow):
        fields["permissionDecision"] = "allow"
    elif isinstance(decision, Deny):
        fields["permissionDecision"] = "deny"
        fields["permissionDecisionReason"] = decision.reason if decision.reason.strip() else EMPTY_REASON
    else:
        assert isinstance(decision, Replace)
        fields |= {"permissionDecision": "allow", "updatedInput": decision.input}
    return {"hookSpecificOutput": fields}


def answer_body(request_id: str, decision: Decision) -> bytes:
    """The ``response`` member of the ``control_response`` answering a ``hook_callback``, compact (as its echo
    reads back)."""
    return compact({"subtype": "success", "request_id": request_id, "response": hook_output(decision)})


def answer_line(body: bytes) -> bytes:
    """The ``control_response`` carrying ``body`` (:func:`answer_body`), one line with its ``\\n``."""
    return b'{"type":"control_response","response":' + body + b"}\n"


def unserved_line(unserved: Unserved) -> bytes:
    """The error ``control_response`` for a request metaharness does not serve, so the CLI never waits on it."""
    error = f"metaharness does not serve control requests of subtype {unserved.subtype!r}"
    response = {"subtype": "error", "request_id": unserved.request_id, "error": error}
    return compact({"type": "control_response", "response": response}) + b"\n"
