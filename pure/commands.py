"""The command stream ``metaharness.command/1`` (docs/events.md#commands).

A run reads one command per line on stdin and processes each in the order of docs/events.md#commands:

1. framing — ``read_command`` refuses a line with the docs/events.md#reading-a-stream messages (``command``
for ``event``); the
   shell writes ``steering_refusal(error)`` on stderr and nothing on stdout;
2. well-formedness — ``check_well_formed`` (``MALFORMED``: an empty deny reason, a ``frame.set``
   frame that fails docs/frames.md#3-what-a-run-does-with-it);
3. adapter support — ``check_supported`` (``UNSUPPORTED_CONTROL``);
4. semantics — the decision desk (``metaharness.pure.decisions``) for ``tool.decide`` and
   ``frame.set``; the adapter for the rest.

The ``command.result`` payloads are built here (``command_ok``, ``command_refused`` and the named
helpers), as is the start-time refusal of docs/events.md#commands (``start_time_refusals``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeAlias

import msgspec
from msgspec import Struct
from returns.result import Failure, Result, Success

from metaharness.pure.events import CommandOk, CommandRefused, CommandResult, Decision, Deny, RefusedCommand
from metaharness.pure.frames import Frame, decode_json, frame_from_object
from metaharness.pure.refusal import Refusal

COMMAND_FORMAT = "metaharness.command/1"
FRAME_SET_APPLIES_AT = "the next turn or step boundary"


class _Command(Struct, frozen=True, kw_only=True, tag_field="command", forbid_unknown_fields=False):
    """A command line's payload; the tag is the command name of docs/events.md#commands, ``id`` its correlation."""

    id: str


class ToolDecide(_Command, frozen=True, tag="tool.decide", kw_only=True):
    """Decide one pending call (decider ``embedder``)."""

    call_id: str
    decision: Decision


class FrameSet(_Command, frozen=True, tag="frame.set", kw_only=True):
    """Put a new frame in force at the next turn or step boundary; ``frame`` is the raw document."""

    frame: dict[str, Any]


class MessageInject(_Command, frozen=True, tag="message.inject", kw_only=True):
    """Text between turns."""

    text: str


class Steer(_Command, frozen=True, tag="steer", kw_only=True):
    """Steer a running turn."""

    text: str


class PermissionSet(_Command, frozen=True, tag="permission.set", kw_only=True):
    """Set the vendor permission posture."""

    posture: str


class Interrupt(_Command, frozen=True, tag="interrupt", kw_only=True):
    """Abandon pending calls (docs/decisions.md#correlation-and-abandonment), then stop the running turn."""

    reason: str


class Halt(_Command, frozen=True, tag="halt", kw_only=True):
    """Abandon pending calls, stop and kill the child, wind the run up (closes ``steer-halt``)."""

    reason: str


Command: TypeAlias = ToolDecide | FrameSet | MessageInject | Steer | PermissionSet | Interrupt | Halt

COMMAND_TYPES: dict[str, type[Any]] = {
    str(cls.__struct_config__.tag): cls
    for cls in (ToolDecide, FrameSet, MessageInject, Steer, PermissionSet, Interrupt, Halt)
}
"""The seven command names of docs/events.md#commands, in the order the reference lists them, each with its struct."""

COMMAND_NAMES: tuple[str, ...] = tuple(COMMAND_TYPES)


def command_name(command: Command) -> str:
    """The name a command was sent under."""
    return str(type(command).__struct_config__.tag)


def _tag_text(tag: object) -> str:
    return tag if isinstance(tag, str) else "<not a string>"


def read_command(line: bytes) -> Result[Command, str]:
    """Framing (docs/events.md#commands step 1) of one stdin line: the docs/events.md#reading-a-stream refusals with
    ``command`` for ``event``; unknown fields are ignored."""
    return decode_json(line).alt(lambda detail: f"not a JSON object: {detail}").bind(_command_of)


def _command_of(raw: Any) -> Result[Command, str]:
    """A decoded line as a command: an object with the format tag, a known name and that command's shape."""
    if not isinstance(raw, dict):
        return Failure("not a JSON object: the document is JSON but not an object")
    if "format" not in raw:
        return Failure(f'no format tag, expected "{COMMAND_FORMAT}"')
    if raw["format"] != COMMAND_FORMAT:
        return Failure(f'unknown format tag "{_tag_text(raw["format"])}", expected "{COMMAND_FORMAT}"')
    name = raw.get("command")
    command_type = COMMAND_TYPES.get(name) if isinstance(name, str) else None
    if command_type is None:
        return Failure(f'unknown command name "{_tag_text(name)}"')
    try:
        command: Command = msgspec.convert(raw, type=command_type)
    except msgspec.ValidationError as error:
        return Failure(f"malformed {name}: {error}")
    return Success(command)


class UnreadableCommand(Struct, frozen=True):
    """A steering line that failed framing but is a JSON object with a string ``id``: silence is not
    an answer to it, so it is refused ``MALFORMED`` with the framing error, and a call it meant to
    decide stays open for a corrected answer."""

    id: str
    error: str


Steering: TypeAlias = Command | UnreadableCommand
"""What one steering line yields past framing: a command, or a line that must still be answered."""


def unreadable_command(line: bytes, error: str) -> UnreadableCommand | None:
    """The line that failed framing with ``error``, when it is a JSON object with a string ``id``."""
    decoded = decode_json(line)
    raw = decoded.unwrap() if not isinstance(decoded, Failure) else None
    command_id = raw.get("id") if isinstance(raw, dict) else None
    return UnreadableCommand(command_id, error) if isinstance(command_id, str) else None


def steering_refusal(error: str) -> str:
    """The stderr line for a line that is not a command (docs/events.md#commands step 1), without its newline."""
    return f"metaharness: the steering line was refused: {error}"


def command_ok(command_id: str, applies_at: str | None = None) -> CommandResult:
    """A command that took effect (``applies_at`` is ``null`` except for ``frame.set``)."""
    return CommandResult(id=command_id, outcome=CommandOk(applies_at=applies_at))


def command_refused(command_id: str, code: str, reason: str) -> CommandResult:
    """A command refused with an upper-case code and a reason (docs/events.md#value-shapes CommandOutcome)."""
    return CommandResult(id=command_id, outcome=CommandRefused(refused=RefusedCommand(code=code, reason=reason)))


def frame_set_ok(command_id: str) -> CommandResult:
    """A ``frame.set`` that took effect: the new frame applies at the next turn or step boundary."""
    return command_ok(command_id, FRAME_SET_APPLIES_AT)


def unsupported_control(command_id: str, adapter: str, command: str) -> CommandResult:
    """``UNSUPPORTED_CONTROL`` (docs/events.md#commands step 3)."""
    return command_refused(command_id, "UNSUPPORTED_CONTROL", f"the {adapter} adapter cannot honour {command}")


def unknown_call(command_id: str, call_id: str) -> CommandResult:
    """``UNKNOWN_CALL``: a ``tool.decide`` for a call never presented (docs/events.md#commands step 4)."""
    return command_refused(command_id, "UNKNOWN_CALL", f"{call_id} does not correlate to an open request")


def too_late(command_id: str, call_id: str) -> CommandResult:
    """``TOO_LATE``: a ``tool.decide`` for a call already decided, abandoned or expired (docs/events.md#commands
    step 4)."""
    return command_refused(command_id, "TOO_LATE", f"{call_id} was decided or its window closed; a decision cannot be replayed")


EMPTY_DENY_REASON = (
    "a deny must carry a non-empty reason: the reason is the only part the model can act on, "
    "and it is the difference between a wall and an instruction"
)
MUTATED_FRAME = "the frame's digest does not describe its contents, so it was mutated after it was sealed"


class WellFormed(Struct, frozen=True):
    """A command that passed well-formedness; a ``frame.set`` carries its loaded frame."""

    command: Command
    frame: Frame | None = None


def check_well_formed(command: Steering) -> Result[WellFormed, CommandResult]:
    """Well-formedness: ``MALFORMED`` for a line that failed framing but carries
    an ``id`` (its framing error), for a deny whose reason is empty after trimming, and for a
    ``frame.set`` frame that fails to load (the digest message for check 7, else the load message)."""
    if isinstance(command, UnreadableCommand):
        return Failure(command_refused(command.id, "MALFORMED", command.error))
    if isinstance(command, ToolDecide) and isinstance(command.decision, Deny) and not command.decision.reason.strip():
        return Failure(command_refused(command.id, "MALFORMED", EMPTY_DENY_REASON))
    if isinstance(command, FrameSet):
        return (
            frame_from_object(command.frame, format_required=False)
            .map(lambda frame: WellFormed(command, frame))
            .alt(
                lambda fault: command_refused(
                    command.id, "MALFORMED", MUTATED_FRAME if fault.check == 7 else fault.message
                )
            )
        )
    return Success(WellFormed(command))


def check_supported(command: Command, adapter: str, honoured: Collection[str]) -> Result[Command, CommandResult]:
    """Adapter support (docs/events.md#commands step 3): ``honoured`` is the adapter's set of honoured commands."""
    name = command_name(command)
    if name in honoured:
        return Success(command)
    return Failure(unsupported_control(command.id, adapter, name))


def commands_needed(decisions: str, frame_named: bool) -> tuple[str, ...]:
    """The commands a run needs (docs/events.md#commands start-time refusals): always ``interrupt`` and ``halt``,
    plus ``tool.decide`` when the mode is ``ask`` or ``observe`` or a frame is named; in
    docs/events.md#commands order."""
    needs_decide = decisions in ("ask", "observe") or frame_named
    return tuple(name for name in COMMAND_NAMES if name in ("interrupt", "halt") or (needs_decide and name == "tool.decide"))


def start_time_refusals(
    decisions: str, frame_named: bool, adapter: str, honoured: Collection[str]
) -> tuple[CommandResult, ...]:
    """One refused ``command.result`` with id ``start/<command>`` per needed command the adapter does
    not honour (docs/events.md#commands); empty when the run may start."""
    return tuple(
        unsupported_control(f"start/{name}", adapter, name)
        for name in commands_needed(decisions, frame_named)
        if name not in honoured
    )


def control_unsupported(refusals: tuple[CommandResult, ...]) -> Refusal:
    """The run refusal ``control-unsupported`` for start-time refusals: their reasons, joined by ``; ``."""
    reasons = [r.outcome.refused.reason for r in refusals if isinstance(r.outcome, CommandRefused)]
    return Refusal("control-unsupported", "; ".join(reasons))
