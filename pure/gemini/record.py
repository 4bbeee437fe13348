"""Gemini CLI's stream-json record read into ``metaharness.event/1`` readings (docs/adapters/gemini.md#record-mapping).

Gemini CLI 0.61.0 writes one JSON object a line on stdout: ``init`` (session id, model), ``message``
(the user's prompt, then the assistant's text as ``delta`` pieces), ``tool_use`` (``tool_name``,
``tool_id``, ``parameters``) before its BeforeTool hook runs, ``tool_result`` (``tool_id``, ``status``,
``output`` or ``error``), ``error`` and the terminal ``result`` (``status``, ``stats``). Assistant
pieces are joined into one ``text`` event, written when any other line arrives.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.census import ZERO_CENSUS
from metaharness.pure.events import (
    ContextFile,
    Event,
    FinalAnswer,
    Hermetic,
    Opaque,
    SessionEnded,
    SessionStarted,
    Text,
    ToolRequested,
    ToolResult,
    Transcript,
    Usage,
    UsageReported,
)
from metaharness.pure.gemini.adapter import KIND
from metaharness.pure.gemini.rendering import resolve_gemini_call
from metaharness.pure.jsonline import canonical, compact, sha256_hex
from metaharness.pure.readings import Announced, Emitted, Finished, Reading, stated_count


class RecordFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the reader takes from the launch: the transcript, the attestation, the context files, the
    inputs digest, the working directory (subjects are spelt relative to it) and the model asked for."""

    transcript: Transcript
    hermetic: Hermetic
    context_files: tuple[ContextFile, ...] = ()
    inputs_digest: str | None = None
    cwd: str | None = None
    model: str | None = None
    harness_version: str | None = None
    """The version ``gemini --version`` printed in the run's environment just before the spawn (the record
    states none); ``None`` when the probe printed none."""


class RecordState(msgspec.Struct, frozen=True):
    """Between lines: the assistant text not yet written, the last text written, whether ``init`` and
    ``result`` were read."""

    pending_text: str = ""
    last_text: str | None = None
    started: bool = False
    ended: bool = False


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _at(record: dict[str, Any]) -> str | UnsetType:
    timestamp = record.get("timestamp")
    return timestamp if isinstance(timestamp, str) else UNSET


def size_of(content: Any) -> int | None:
    """``bytes`` of a content value: the UTF-8 length of a string, or of its compact JSON."""
    if content is None:
        return None
    return len(content.encode()) if isinstance(content, str) else len(compact(content))


def recorded_request(call_id: str, name: str, call_input: Any, cwd: str | None) -> ToolRequested:
    """A call's ``tool.requested`` as the record states it: seam none, nothing to decide."""
    operations, subjects = resolve_gemini_call(name, call_input, cwd)
    return ToolRequested(
        call_id=call_id, name=name, input=call_input,
        operations=tuple(dict.fromkeys(op.op for op in operations)) or UNSET, subjects=subjects or UNSET,
        decision_required=False, deadline_ms=None, seam="none",
    )  # fmt: skip


def stats_usage(stats: dict[str, Any]) -> Usage:
    """Usage from ``result.stats`` (``input_tokens``, ``output_tokens``, ``cached``)."""
    return Usage(
        input_tokens=stated_count(stats.get("input_tokens")), output_tokens=stated_count(stats.get("output_tokens")),
        cache_read_input_tokens=stated_count(stats.get("cached")), cache_creation_input_tokens=None,
        service_tier=None, thinking_tokens=None, iterations=None, speed=None, cost_usd=None,
    )  # fmt: skip


def session_started(record: dict[str, Any], facts: RecordFacts) -> SessionStarted:
    """``session.started`` from ``init``: the version is the launch's ``--version`` probe's; the record states no
    working directory, plugins, MCP servers or credential source, so they are null (their rows read ``unk``)."""
    return SessionStarted(
        adapter=KIND, adapter_class="harness", harness_version=facts.harness_version, session_id=_text(record.get("session_id")),
        model=_text(record.get("model")) or facts.model, permission_mode="yolo", credential_source=None,
        output_style=None, cwd=None, offered_tools=None, withheld=None, slash_commands=None, skills=None,
        agents=None, plugins=None, mcp_servers=None, inputs_digest=facts.inputs_digest, transcript=facts.transcript,
        context_files=facts.context_files or UNSET, hermetic=facts.hermetic,
    )  # fmt: skip


def session_ended(record: dict[str, Any], last_text: str | None) -> SessionEnded:
    """``session.ended`` from ``result``: ``is_error`` unless the status is ``success``; the census is filled by
    the session."""
    stats = _dict(record.get("stats"))
    status = _text(record.get("status"))
    models = {name: stats_usage(_dict(value)) for name, value in _dict(stats.get("models")).items()}
    return SessionEnded(
        final_answer=None if last_text is None else FinalAnswer(text=last_text, turn_id=None), observed_models=None,
        is_error=status != "success", subtype=status, stop_reason=None,
        terminal_reason=_text(_dict(record.get("error")).get("type")), api_error_status=None, num_turns=None,
        duration_ms=stated_count(stats.get("duration_ms")), duration_api_ms=None, ttft_ms=None,
        time_to_request_ms=None, total_cost_usd=None, permission_denials=None, subagents_spawned=None,
        usage=stats_usage(stats) if stats else None, model_usage=models or None, census=ZERO_CENSUS,
    )  # fmt: skip


def tool_result(record: dict[str, Any]) -> ToolResult:
    """A ``tool_result`` line: an error status is an error, its content the output or the error's message."""
    error = record.get("error")
    is_error = record.get("status") != "success"
    content = record.get("output") if "output" in record else _dict(error).get("message")
    return ToolResult(exit_code=None, outcome_source=None, call_id=str(record.get("tool_id")), is_error=is_error,
                      content=content, bytes=size_of(content), tool_use_result=None)  # fmt: skip


def _flushed(state: RecordState) -> tuple[RecordState, tuple[Reading, ...]]:
    if not state.pending_text:
        return state, ()
    text = state.pending_text
    return RecordState(last_text=text, started=state.started, ended=state.ended), (Emitted(Text(text=text, request_id=None)),)


def opaque(raw: bytes, record: Any, source_line: int) -> Opaque:
    """An ``opaque`` event for a line metaharness does not map."""
    vendor_type = _text(record.get("type")) if isinstance(record, dict) else None
    return Opaque(vendor_type=vendor_type, vendor_subtype=None, digest=sha256_hex(raw), source_line=source_line)


def read_record_line(
    state: RecordState, raw: bytes, source_line: int, facts: RecordFacts
) -> tuple[RecordState, tuple[Reading, ...]]:
    """Fold one stream-json line (without its terminator) into the reader."""
    try:
        record = decode_bounded(raw)
    except msgspec.DecodeError:
        record = None
    kind = record.get("type") if isinstance(record, dict) else None
    if isinstance(record, dict) and kind == "message" and record.get("role") == "assistant":
        piece = _text(record.get("content")) or ""
        return msgspec.structs.replace(state, pending_text=state.pending_text + piece), ()
    state, readings = _flushed(state)
    if not isinstance(record, dict):
        return state, (*readings, Emitted(opaque(raw, record, source_line)))
    at = _at(record)
    mapped: tuple[Reading, ...]
    if kind == "init":
        state = msgspec.structs.replace(state, started=True)
        mapped = (Emitted(session_started(record, facts), at),)
    elif kind == "tool_use" and isinstance(record.get("tool_id"), str) and isinstance(record.get("tool_name"), str):
        call_id = record["tool_id"]
        mapped = (Announced(call_id, recorded_request(call_id, record["tool_name"], record.get("parameters"),
                                                      facts.cwd), at),)  # fmt: skip
    elif kind == "tool_result" and isinstance(record.get("tool_id"), str):
        mapped = (Finished(record["tool_id"], tool_result(record), at),)
    elif kind == "result":
        state = msgspec.structs.replace(state, ended=True)
        ended: list[Event] = []
        stats = _dict(record.get("stats"))
        if stats:
            ended.append(UsageReported(request_id=None, model=facts.model, usage=stats_usage(stats)))
        ended.append(session_ended(record, state.last_text))
        mapped = tuple(Emitted(event, at) for event in ended)
    else:
        mapped = (Emitted(opaque(raw, record, source_line), at),)
    return state, (*readings, *mapped)


def canonical_input(call_input: Any) -> bytes:
    """A call's input as a correlation key: compact JSON with keys sorted (docs/adapters/gemini.md#correlation)."""
    return canonical(call_input)
