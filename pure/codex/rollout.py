"""Reading a Codex rollout into ``metaharness.event/1`` payloads (docs/adapters/codex.md#rollout-mapping).

One line at a time: ``read_rollout_line`` folds a line into the reader's state and says what it
yields — plain events, a call the record announces, or a call's result. Which seam a call is
presented on is the correlator's business (``metaharness.pure.correlation``); ``session_ended``
builds the terminal event at stream end, iff a ``task_complete`` was seen.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from immutables import Map
from msgspec import UNSET, UnsetType

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.call_memory import CallMemory
from metaharness.pure.codex.rendering import operation_names, resolve_call
from metaharness.pure.codex.sandbox import SandboxGrant, sandbox_grant
from metaharness.pure.events import (
    AuthExpired,
    Census,
    ContextFile,
    FinalAnswer,
    Hermetic,
    ObservedModel,
    Opaque,
    RateLimit,
    RateLimitInfo,
    SessionEnded,
    SessionStarted,
    Text,
    Thinking,
    ToolRequested,
    ToolResult,
    Transcript,
    TurnEnded,
    TurnStarted,
    Usage,
    UsageReported,
    WarningRaised,
)
from metaharness.pure.jsonline import compact, sha256_hex
from metaharness.pure.readings import Announced, Emitted, Finished, Reading, stated_count

EXPIRY_PHRASES = ("session has expired", "session expired", "failed to refresh access token", "please run /login")
"""The claude expiry phrases an ``event_msg``/``error`` is searched for (docs/adapters/claude.md;
docs/adapters/codex.md)."""

OUTCOME_SOURCE = "retained_tool_completion"

ROLLOUT_THREAD = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""A codex thread id as its rollouts' names and ``SubAgentActivity`` items spell it."""

_JSON_OPENINGS = '{["-0123456789'
"""The characters a JSON text other than ``true``, ``false`` and ``null`` starts with after its whitespace: a
string that starts otherwise and is no such word is no JSON."""

_NOTED = ("_turn_id", "_at")
"""What the reader adds to a noted completion item: its turn and its line's timestamp."""


class RolloutLaunch(msgspec.Struct, frozen=True, kw_only=True):
    """What the launch (or the replay's options) contributes to the events (docs/adapters/codex.md,
    docs/events.md#replay).

    ``program`` names the binary in ``VERSION_OFF_PIN``; ``frame_digest`` is the frame in force; ``tmpdir``
    is the child's ``TMPDIR``, where codex's grant places its ``tmpdir`` entry.
    """

    program: str
    pins: tuple[str, ...]
    transcript: Transcript
    hermetic: Hermetic
    context_files: tuple[ContextFile, ...] = ()
    inputs_digest: str | None = None
    frame_digest: str | None = None
    tmpdir: str | None = None


class CallFacts(msgspec.Struct, frozen=True):
    """What the reader keeps about an announced call to judge its structured evidence."""

    name: str
    turn_id: str | None


class RolloutReader(msgspec.Struct, frozen=True, kw_only=True):
    """The reader's state between lines."""

    launch: RolloutLaunch
    started: bool = False
    turns: int = 0
    turn_id: str | None = None
    error_in_turn: bool = False
    last_complete: dict[str, Any] | None = None
    last_complete_at: str | UnsetType = UNSET
    last_usage: Usage | None = None
    observed: Map[int, ObservedModel] = Map()
    """The models observed, numbered in order; ``selections`` the turns (and turn ids) they were observed in."""
    selections: Map[tuple[int, str | None], bool] = Map()
    calls: CallMemory[CallFacts] = CallMemory()
    """The announced calls (the last ``CALL_MEMORY_LIMIT`` or more)."""
    evidence: CallMemory[dict[str, Any]] = CallMemory()
    """The recorded completions by item or call id (the last ``CALL_MEMORY_LIMIT`` or more)."""
    grant: SandboxGrant | None = None
    agents: Map[str, bool] = Map()
    """The sub-agents' thread ids this record names (``SubAgentActivity`` items): only their rollouts are read."""

    @property
    def terminal_seen(self) -> bool:
        """Whether a ``task_complete`` was read: the codex terminal record (docs/adapters/codex.md)."""
        return self.last_complete is not None


def _opaque(raw: bytes, source_line: int, vendor_type: Any = None, vendor_subtype: Any = None) -> Opaque:
    return Opaque(
        vendor_type=vendor_type if isinstance(vendor_type, str) else None,
        vendor_subtype=vendor_subtype if isinstance(vendor_subtype, str) else None,
        digest=sha256_hex(raw),
        source_line=source_line,
    )


def _opaque_line(raw: bytes, source_line: int, kind: Any, payload: dict[str, Any], at: str | UnsetType) -> Emitted:
    """A line mapped to nothing else: ``opaque``, its digest taken only then."""
    return Emitted(_opaque(raw, source_line, kind, payload.get("type")), at)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    return float(value) if isinstance(value, int | float) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def size_of(content: Any) -> int | None:
    """``bytes`` of a content value: the UTF-8 length of a string, or of its compact JSON."""
    if content is None:
        return None
    return len(content.encode()) if isinstance(content, str) else len(compact(content))


def codex_usage(total: dict[str, Any]) -> Usage:
    """``usage`` from ``info.total_token_usage`` (docs/adapters/codex.md ``token_count``)."""
    return Usage(
        input_tokens=stated_count(total.get("input_tokens")),
        output_tokens=stated_count(total.get("output_tokens")),
        cache_read_input_tokens=stated_count(total.get("cached_input_tokens")),
        cache_creation_input_tokens=stated_count(total.get("cache_write_input_tokens")),
        service_tier=None,
        thinking_tokens=stated_count(total.get("reasoning_output_tokens")),
        iterations=None,
        speed=None,
        cost_usd=None,
    )


def _rate_limit(limits: dict[str, Any]) -> RateLimit:
    primary = _dict(limits.get("primary"))
    return RateLimit(
        info=RateLimitInfo(
            status=_str(limits.get("rate_limit_reached_type")),
            window=_str(limits.get("limit_name")) or _str(limits.get("limit_id")),
            resets_at=stated_count(primary.get("resets_at")),
            utilization=_float(primary.get("used_percent")),
            using_overage=None,
        )
    )


def _joined_text(parts: Any, kinds: tuple[str, ...]) -> str:
    if not isinstance(parts, list):
        return ""
    return "".join(
        p["text"] for p in parts if isinstance(p, dict) and p.get("type") in kinds and isinstance(p.get("text"), str)
    )


def _call_input(payload: dict[str, Any]) -> Any:
    """The decoded ``arguments`` (``input`` on a custom call), or the raw string when it does not decode."""
    raw = payload.get("arguments", payload.get("input"))
    if not isinstance(raw, str):
        return raw
    text = raw.strip(" \t\n\r")
    if text[:1] not in _JSON_OPENINGS and text not in ("true", "false", "null"):
        return raw
    try:
        return decode_bounded(raw)
    except msgspec.DecodeError:
        return raw


def recorded_request(call_id: str, name: str, input: Any) -> ToolRequested:
    """A call's ``tool.requested`` as the record states it: seam none, nothing to decide
    (docs/adapters/common.md#one-event-per-call (b))."""
    operations, subjects = resolve_call(name, input)
    return ToolRequested(
        call_id=call_id,
        name=name,
        input=input,
        operations=operation_names(operations) or UNSET,
        subjects=subjects or UNSET,
        decision_required=False,
        deadline_ms=None,
        seam="none",
    )


def _session_started(launch: RolloutLaunch, payload: dict[str, Any]) -> SessionStarted:
    return SessionStarted(
        adapter="codex",
        adapter_class="harness",
        harness_version=_str(payload.get("cli_version")),
        session_id=_str(payload.get("session_id")) or _str(payload.get("id")),
        model=None,
        permission_mode=None,
        credential_source=None,
        output_style=None,
        cwd=_str(payload.get("cwd")),
        offered_tools=None,
        withheld=None,
        slash_commands=None,
        skills=None,
        agents=None,
        plugins=None,
        mcp_servers=None,
        inputs_digest=launch.inputs_digest,
        transcript=launch.transcript,
        context_files=launch.context_files or UNSET,
        hermetic=launch.hermetic,
    )


def version_warning(program: str, found: str, pins: tuple[str, ...]) -> WarningRaised:
    """``VERSION_OFF_PIN`` with docs/events.md#warning-codes's message."""
    return WarningRaised(
        code="VERSION_OFF_PIN",
        message=f"{program} reports {found}; the adapter is pinned to {', '.join(pins)}, "
        "so this run is unverified rather than refused",
    )


def _family(name: str) -> str:
    return "FileChange" if name == "apply_patch" else "CommandExecution"


def _result(reader: RolloutReader, call_id: str, output: Any) -> tuple[ToolResult, WarningRaised | None]:
    """``tool.result`` for a call's output record, from its structured evidence when there is any
    (docs/adapters/codex.md#rollout-mapping); output text is never parsed."""
    plain = ToolResult(
        exit_code=None,
        outcome_source=None,
        call_id=call_id,
        is_error=None,
        content=output,
        bytes=size_of(output),
        tool_use_result=None,
    )
    item = reader.evidence.get(call_id)
    if item is None:
        return plain, None
    facts = reader.calls.get(call_id)
    family = item.get("type")
    turn_id = item.get("_turn_id")
    if facts is None or family != _family(facts.name) or (turn_id is not None and turn_id != facts.turn_id):
        warning = WarningRaised(
            code="TOOL_OUTCOME_UNVERIFIED",
            message=f"the completion recorded for {call_id} does not match the call's family, turn or id, "
            "so its outcome is left unknown",
        )
        return plain, warning
    return _evidenced(call_id, item, output), None


def nested_result(reader: RolloutReader, call_id: str) -> ToolResult | None:
    """``tool.result`` for a call the rollout never announced but whose completion it records under the
    call's own id: a code-mode ``exec`` host's nested call, which the hook delivered with that id
    (docs/vendor-facts.md); ``None`` when the rollout announced the call or records no completion."""
    item = reader.evidence.get(call_id)
    if item is None or call_id in reader.calls:
        return None
    return _evidenced(call_id, item, None)


def _evidenced(call_id: str, item: dict[str, Any], output: Any) -> ToolResult:
    """``tool.result`` from a recorded completion item; ``output`` is the content when the item has none."""
    evidence = {key: value for key, value in item.items() if key not in _NOTED}
    family = item.get("type")
    exit_code = _int(evidence.get("exit_code"))
    status = evidence.get("status")
    if family == "CommandExecution":
        content = evidence.get("aggregated_output", evidence.get("stdout", output))
        if status == "completed" and exit_code == 0:
            is_error: bool | None = False
        elif status in ("failed", "declined") or (exit_code is not None and exit_code != 0):
            is_error = True
        else:
            is_error = None
    else:
        content = evidence.get("stdout", output)
        is_error = None if not isinstance(status, str) else status != "completed"
        exit_code = None
    return ToolResult(
        exit_code=exit_code,
        outcome_source=OUTCOME_SOURCE,
        call_id=call_id,
        is_error=is_error,
        content=content,
        bytes=size_of(content),
        tool_use_result=evidence,
    )


def read_rollout_line(reader: RolloutReader, raw: bytes, source_line: int) -> tuple[RolloutReader, tuple[Reading, ...]]:
    """Fold one complete rollout line (without its terminator) into the reader (docs/adapters/codex.md).

    ``source_line`` is its 1-based line in the retained copy; blank lines yield nothing.
    """
    if not raw.strip():
        return reader, ()
    try:
        line = decode_bounded(raw)
    except msgspec.DecodeError:
        return reader, (Emitted(_opaque(raw, source_line)),)
    if not isinstance(line, dict):
        return reader, (Emitted(_opaque(raw, source_line)),)
    at = line["timestamp"] if isinstance(line.get("timestamp"), str) else UNSET
    kind = line.get("type")
    payload = _dict(line.get("payload"))
    if kind == "session_meta":
        if reader.started:
            return reader, (_opaque_line(raw, source_line, kind, payload, at),)
        started = _session_started(reader.launch, payload)
        readings: tuple[Reading, ...] = (Emitted(started, at),)
        version = started.harness_version
        if version is not None and version not in reader.launch.pins:
            readings = (Emitted(version_warning(reader.launch.program, version, reader.launch.pins), at), *readings)
        return msgspec.structs.replace(reader, started=True), readings
    if kind == "response_item":
        return _response_item(reader, payload, raw, source_line, at)
    if kind == "event_msg":
        return _event_msg(reader, payload, raw, source_line, at)
    if kind == "turn_context":
        reader = msgspec.structs.replace(reader, grant=sandbox_grant(payload, reader.launch.tmpdir))
        model = _str(payload.get("model"))
        turn_id = _str(payload.get("turn_id"))
        seen = bool(reader.turns) and (reader.turns, turn_id) in reader.selections  # turn 0 is noted as None
        if model is not None and not seen:
            observed = ObservedModel(turn=reader.turns or None, turn_id=turn_id, model=model, scope="turn_selection")
            reader = msgspec.structs.replace(reader, observed=reader.observed.set(len(reader.observed), observed),
                                             selections=reader.selections.set((reader.turns, turn_id), True))  # fmt: skip
    return reader, (_opaque_line(raw, source_line, kind, payload, at),)


def _response_item(
    reader: RolloutReader, payload: dict[str, Any], raw: bytes, source_line: int, at: str | UnsetType
) -> tuple[RolloutReader, tuple[Reading, ...]]:
    subtype = payload.get("type")
    call_id = _str(payload.get("call_id"))
    if subtype in ("function_call", "custom_tool_call") and call_id is not None:
        name = _str(payload.get("name")) or ""
        requested = recorded_request(call_id, name, _call_input(payload))
        calls = reader.calls.set(call_id, CallFacts(name, reader.turn_id))
        return msgspec.structs.replace(reader, calls=calls), (Announced(call_id, requested, at),)
    if subtype in ("function_call_output", "custom_tool_call_output") and call_id is not None:
        result, warning = _result(reader, call_id, payload.get("output"))
        return reader, (Finished(call_id, result, at, warning),)
    if subtype == "message" and payload.get("role") == "assistant":
        text = _joined_text(payload.get("content"), ("output_text", "text"))
        return reader, (Emitted(Text(text=text, request_id=None), at),)
    if subtype == "reasoning":
        text = _joined_text(payload.get("summary"), ("summary_text",)) or _joined_text(
            payload.get("content"), ("reasoning_text", "text")
        )
        return reader, (Emitted(Thinking(text=text, request_id=None), at),)
    return reader, (_opaque_line(raw, source_line, "response_item", payload, at),)


def _event_msg(
    reader: RolloutReader, payload: dict[str, Any], raw: bytes, source_line: int, at: str | UnsetType
) -> tuple[RolloutReader, tuple[Reading, ...]]:
    subtype = payload.get("type")
    if subtype in ("agent_reasoning", "agent_reasoning_raw_content"):
        return reader, (Emitted(Thinking(text=_str(payload.get("text")) or "", request_id=None), at),)
    if subtype == "agent_message":
        return reader, (Emitted(Text(text=_str(payload.get("message")) or "", request_id=None), at),)
    if subtype == "task_started":
        turn = reader.turns + 1
        reader = msgspec.structs.replace(reader, turns=turn, turn_id=_str(payload.get("turn_id")), error_in_turn=False)
        return reader, (Emitted(TurnStarted(turn=turn, frame_digest=reader.launch.frame_digest), at),)
    if subtype == "task_complete":
        reader = msgspec.structs.replace(reader, last_complete=payload, last_complete_at=at)
        return reader, (Emitted(TurnEnded(turn=reader.turns, stop_reason=None), at),)
    if subtype == "token_count":
        readings: list[Reading] = []
        total = _dict(payload.get("info")).get("total_token_usage")
        if isinstance(total, dict):
            usage = codex_usage(total)
            reader = msgspec.structs.replace(reader, last_usage=usage)
            readings.append(Emitted(UsageReported(request_id=None, model=None, usage=usage), at))
        if isinstance(payload.get("rate_limits"), dict):
            readings.append(Emitted(_rate_limit(payload["rate_limits"]), at))
        return reader, tuple(readings) or (_opaque_line(raw, source_line, "event_msg", payload, at),)
    if subtype == "item_completed":
        item = payload.get("item")
        reader = _named_agent(reader, item)
        if (
            isinstance(item, dict)
            and item.get("type") in ("CommandExecution", "FileChange")
            and isinstance(item.get("id"), str)
        ):
            noted = {**item, "_turn_id": _str(payload.get("turn_id")), "_at": at}
            reader = msgspec.structs.replace(reader, evidence=reader.evidence.set(item["id"], noted))
        return reader, (_opaque_line(raw, source_line, "event_msg", payload, at),)
    if subtype == "patch_apply_end" and isinstance(payload.get("call_id"), str):
        status = "completed" if payload.get("success") is True else "failed"
        noted = {
            "type": "FileChange",
            "id": payload["call_id"],
            "status": status,
            "stdout": payload.get("stdout"),
            "_turn_id": _str(payload.get("turn_id")),
        }
        reader = msgspec.structs.replace(reader, evidence=reader.evidence.set(payload["call_id"], noted))
        return reader, (_opaque_line(raw, source_line, "event_msg", payload, at),)
    if subtype in ("error", "turn_aborted"):
        reader = msgspec.structs.replace(reader, error_in_turn=True)
        message = _str(payload.get("message"))
        if subtype == "error" and message is not None and any(p in message.lower() for p in EXPIRY_PHRASES):
            expired = AuthExpired(credential_source=None, detail=message, source_line=source_line)
            return reader, (Emitted(expired, at), _opaque_line(raw, source_line, "event_msg", payload, at))
    return reader, (_opaque_line(raw, source_line, "event_msg", payload, at),)


def _named_agent(reader: RolloutReader, item: Any) -> RolloutReader:
    """The reader with the thread of a sub-agent the item says was started (a ``SubAgentActivity`` item)."""
    if not isinstance(item, dict) or item.get("type") != "SubAgentActivity":
        return reader
    thread = item.get("agent_thread_id")
    if not isinstance(thread, str) or not ROLLOUT_THREAD.fullmatch(thread) or thread in reader.agents:
        return reader
    return msgspec.structs.replace(reader, agents=reader.agents.set(thread, True))


def rollout_thread(name: str) -> str | None:
    """The thread id a rollout's file name ends in (``rollout-<time>-<thread>.jsonl``), or ``None``."""
    stem = name.removesuffix(".jsonl")
    thread = stem[-36:]
    if stem == name or not name.startswith("rollout-") or not ROLLOUT_THREAD.fullmatch(thread):
        return None
    return thread if stem[: -len(thread)].endswith("-") else None


def session_ended(reader: RolloutReader, census: Census) -> SessionEnded | None:
    """``session.ended`` at stream end iff a ``task_complete`` was seen (docs/adapters/codex.md); it is written
    with the last ``task_complete``'s timestamp (``reader.last_complete_at``), its source record."""
    complete = reader.last_complete
    if complete is None:
        return None
    answer = _str(complete.get("last_agent_message"))
    final = (
        FinalAnswer(text=answer, turn_id=_str(complete.get("turn_id")))
        if answer is not None and not reader.error_in_turn
        else None
    )
    return SessionEnded(
        final_answer=final,
        observed_models=tuple(reader.observed[number] for number in range(len(reader.observed))) or None,
        is_error=reader.error_in_turn,
        subtype=None,
        stop_reason=None,
        terminal_reason=None,
        api_error_status=None,
        num_turns=reader.turns,
        duration_ms=stated_count(complete.get("duration_ms")),
        duration_api_ms=None,
        ttft_ms=stated_count(complete.get("time_to_first_token_ms")),
        time_to_request_ms=None,
        total_cost_usd=None,
        permission_denials=None,
        subagents_spawned=None,
        usage=reader.last_usage,
        model_usage=None,
        census=census,
    )


def read_sub_agent_line(
    reader: RolloutReader, raw: bytes, source_line: int
) -> tuple[RolloutReader, tuple[Reading, ...]]:
    """One line of a sub-agent's rollout: only the calls it announces and their results reach this
    session's stream (its session, turns, text and usage are the sub-agent's own), so every call the
    provider was answered with appears, on the seam that delivered it or none."""
    reader, readings = read_rollout_line(reader, raw, source_line)
    return reader, tuple(reading for reading in readings if isinstance(reading, Announced | Finished))
