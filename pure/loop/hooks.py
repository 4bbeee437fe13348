"""The loop's ``--hooks`` (docs/loop-extensions.md): the file's shape, each hook's stdin document, and
what a hook program's exit means.

before-call hooks fail closed: exit 0 proceeds, exit 2 blocks with the ``reason`` it printed, and
anything else (another exit, a signal, the time limit, a program that cannot start) blocks too, with
``hook-failed``. after-call hooks add ``{"note":…}`` texts to the result as ``hook_notes``; a failure
changes nothing. A stop hook's exit 2 continues the run with its reason as a user item, at most
``STOP_CONTINUATIONS`` times.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.budgets import LOOP_HOOK_TIMEOUT_S
from metaharness.pure.jsonline import compact

STOP_CONTINUATIONS = 3
HOOK_OUTPUT_CAP = 64 * 1024
NO_REASON = "the hook gave no reason"
Moment = Literal["before-call", "after-call", "stop"]
MOMENTS: tuple[Moment, ...] = ("before-call", "after-call", "stop")


class Hook(msgspec.Struct, frozen=True):
    """One hook: when it runs, the entry names it is limited to (``None``: every call), its argv."""

    on: Moment
    tools: tuple[str, ...] | None
    command: tuple[str, ...]

    def applies(self, moment: Moment, name: str | None) -> bool:
        """Whether this hook runs at ``moment`` for a call of entry ``name`` (``None`` at stop)."""
        return self.on == moment and (self.tools is None or name in self.tools)


class HookExit(msgspec.Struct, frozen=True):
    """How a hook program ended: its exit status (``None`` when killed by a signal, timed out or not
    started), whether the time limit ended it, why it could not start, and its stdout."""

    status: int | None
    timed_out: bool = False
    start_error: str | None = None
    stdout: bytes = b""


class Proceed(msgspec.Struct, frozen=True):
    """The call may go on."""


class Block(msgspec.Struct, frozen=True):
    """The call is blocked: the model-facing reason, and the ``hook-failed`` message when it failed."""

    reason: str
    failure: str | None = None


def parse_hooks(label: str, raw: bytes) -> Result[tuple[Hook, ...], str]:
    """``{"version":1,"hooks":[{"on", "tools"?, "command"}]}``; any other shape refuses, naming the file."""
    try:
        document = decode_bounded(raw)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return Failure(f"--hooks {label} is not JSON")
    shaped = isinstance(document, dict) and set(document) == {"version", "hooks"}
    if not shaped or type(document["version"]) is not int or document["version"] != 1:
        return Failure(f'--hooks {label} must be {{"version":1,"hooks":[…]}} with no other key')
    if not isinstance(document["hooks"], list):
        return Failure(f"--hooks {label}: `hooks` must be a list")
    hooks: list[Hook] = []
    for number, entry in enumerate(document["hooks"], start=1):
        hook = _hook(entry)
        if isinstance(hook, str):
            return Failure(f"--hooks {label}: hook {number} {hook}")
        hooks.append(hook)
    return Success(tuple(hooks))


def _hook(entry: Any) -> Hook | str:
    if not isinstance(entry, dict) or not {"on", "command"} <= set(entry) or set(entry) - {"on", "tools", "command"}:
        return "must be an object with `on`, `command` and optionally `tools`, and no other key"
    on = entry["on"]
    if on not in MOMENTS:
        return f"has `on` {compact(on).decode()}, not one of {', '.join(MOMENTS)}"
    command = entry["command"]
    if not isinstance(command, list) or not command or not all(isinstance(word, str) and word for word in command):
        return "needs `command` as a non-empty list of non-empty strings"
    tools = entry.get("tools")
    if tools is not None and (
        on == "stop" or not isinstance(tools, list) or not all(isinstance(name, str) and name for name in tools)
    ):
        return "may name `tools` (a list of entry names) only on a before-call or after-call hook"
    return Hook(on, tuple(tools) if tools is not None else None, tuple(command))


def call_document(moment: Moment, call_id: str, name: str, arguments: Any) -> bytes:
    """A call hook's stdin: ``{"on","call_id","name","arguments"}``."""
    return compact({"on": moment, "call_id": call_id, "name": name, "arguments": arguments}) + b"\n"


def stop_document(stop: Any, turns: int) -> bytes:
    """A stop hook's stdin: ``{"on":"stop","stop","turns"}``."""
    return compact({"on": "stop", "stop": stop, "turns": turns}) + b"\n"


def _failure(hook: Hook, ended: HookExit) -> str | None:
    """The ``hook-failed`` message when ``ended`` is neither exit 0 nor exit 2, else ``None``."""
    program = hook.command[0]
    if ended.start_error is not None:
        return f"the {hook.on} hook `{program}` could not start: {ended.start_error}"
    if ended.timed_out:
        return f"the {hook.on} hook `{program}` did not finish within {LOOP_HOOK_TIMEOUT_S:g} s and was killed"
    if ended.status is None:
        return f"the {hook.on} hook `{program}` was killed by a signal"
    if ended.status not in (0, 2):
        return f"the {hook.on} hook `{program}` exited {ended.status}"
    return None


def _field(stdout: bytes, key: str) -> str | None:
    """``key`` of the JSON object a hook printed, when it is a non-empty string."""
    try:
        document = decode_bounded(stdout.strip() or b"null")
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    value = document.get(key) if isinstance(document, dict) else None
    return value if isinstance(value, str) and value else None


def before_call_verdict(hook: Hook, ended: HookExit) -> Proceed | Block:
    """Exit 0 proceeds; exit 2 blocks with its ``reason``; anything else blocks and is ``hook-failed``."""
    failure = _failure(hook, ended)
    if failure is not None:
        return Block(f"the hook failed ({failure}), so the call is blocked", failure)
    if ended.status == 0:
        return Proceed()
    return Block(_field(ended.stdout, "reason") or NO_REASON)


def blocked_text(entry: str, reason: str) -> str:
    """The model-facing result of a blocked call."""
    return f"`{entry}` was blocked by a hook: {reason}"


def after_call_note(hook: Hook, ended: HookExit) -> tuple[str | None, str | None]:
    """(the ``note`` an exit-0 hook printed, the ``hook-failed`` message of any other end)."""
    failure = _failure(hook, ended)
    if failure is None and ended.status == 2:
        failure = f"the after-call hook `{hook.command[0]}` exited 2"
    if failure is not None:
        return None, failure
    return _field(ended.stdout, "note"), None


def with_notes(output: str, notes: tuple[str, ...]) -> str:
    """The result with its ``hook_notes``: a key added to a JSON object result, else a last line."""
    if not notes:
        return output
    try:
        value = decode_bounded(output)
    except msgspec.DecodeError:
        value = None
    if isinstance(value, dict) and "hook_notes" not in value:
        return compact({**value, "hook_notes": list(notes)}).decode()
    return f"{output}\nhook_notes: {compact(list(notes)).decode()}"


def stop_verdict(hook: Hook, ended: HookExit) -> tuple[str | None, str | None]:
    """(the reason to continue with, for exit 2; the ``hook-failed`` message of a failure)."""
    failure = _failure(hook, ended)
    if failure is not None:
        return None, failure
    if ended.status == 2:
        return _field(ended.stdout, "reason") or NO_REASON, None
    return None, None


def exhausted_message() -> str:
    """The ``stop-hook-exhausted`` warning."""
    return f"a stop hook asked to continue after {STOP_CONTINUATIONS} continuations; the stop stands"
