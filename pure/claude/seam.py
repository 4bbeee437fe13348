"""Claude Code's stream-json record read into ``metaharness.event/1``
(docs/adapters/common.md#answer-bodies; docs/adapters/claude.md#record-mapping).

:func:`map_record` reads one transcript line into :class:`Mapped` items: plain events, and each
``tool_use`` block as a :class:`RecordCall` the call ledger (``metaharness.pure.calls``) turns into
exactly one ``tool.requested``. ``session.ended`` carries an empty census here; the ledger fills it
from the decisions it emitted. A decision's answer is rendered by ``metaharness.pure.claude.control``.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.call_memory import CallMemory
from metaharness.pure.catalogue import Catalogue
from metaharness.pure.census import ZERO_CENSUS
from metaharness.pure.claude.rendering import resolve_claude_call
from metaharness.pure.claude.vendor import PINS
from metaharness.pure.events import (
    AuthExpired,
    ContextFile,
    Event,
    Hermetic,
    Injection,
    McpServer,
    Opaque,
    PermissionDenial,
    Plugin,
    RateLimit,
    RateLimitInfo,
    SessionEnded,
    SessionStarted,
    Text,
    Thinking,
    ThinkingEstimate,
    ToolRequested,
    ToolResult,
    Transcript,
    Usage,
    UsageReported,
    WarningRaised,
)
from metaharness.pure.jsonline import compact, sha256_hex
from metaharness.pure.readings import Announced, Emitted, Finished, stated_amount, stated_count

BUDGET_WORDS = frozenset({"budget-exhausted", "error_max_turns", "error_max_budget_usd"})
"""The terminal words that close a claude stream ``budget`` (docs/events.md#stream-ending)."""

EXPIRY_PHRASES = ("session has expired", "session expired", "failed to refresh access token", "please run /login")
"""Phrases that mark an expired credential in a record (docs/adapters/claude.md#record-mapping)."""
_EXPIRY = re.compile("|".join(re.escape(phrase) for phrase in EXPIRY_PHRASES))



class SessionFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the reader takes from the launch rather than the record (docs/adapters/claude.md): the transcript, the
    attestation, the context files, the inputs digest, for ``replay`` the model and harness version
    used when the record states none, and a catalogue run's checked catalogue (call resolution)."""

    transcript: Transcript
    hermetic: Hermetic
    context_files: tuple[ContextFile, ...] = ()
    inputs_digest: str | None = None
    model: str | None = None
    harness_version: str | None = None
    catalogue: Catalogue | None = None


Mapped = Emitted | Announced | Finished


class RecordState(msgspec.Struct, frozen=True):
    """What the reader remembers between lines: whether ``init`` and ``result`` were seen, the
    credential source ``init`` stated, and the last usage per ``message.id`` (repeats dropped; the last
    ``CALL_MEMORY_LIMIT`` or more messages)."""

    started: bool = False
    ended: bool = False
    credential_source: str | None = None
    cwd: str | None = None
    usage_seen: CallMemory[Usage] = CallMemory()


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(item for item in value if isinstance(item, str))


def _at(record: dict[str, Any]) -> str | UnsetType:
    timestamp = record.get("timestamp")
    return timestamp if isinstance(timestamp, str) else UNSET


def opaque(raw: bytes, record: Any, source_line: int) -> Opaque:
    """An ``opaque`` event: the record's type and subtype when it is a JSON object, the digest of the
    raw line without its terminator, and its 1-based line (docs/events.md#the-twenty-events)."""
    is_object = isinstance(record, dict)
    return Opaque(
        vendor_type=_text(record.get("type")) if is_object else None,
        vendor_subtype=_text(record.get("subtype")) if is_object else None,
        digest=sha256_hex(raw),
        source_line=source_line,
    )


def usage_of(raw: Any) -> Usage:
    """Usage from a vendor usage object (docs/adapters/claude.md#record-mapping): ``thinking_tokens`` from
    ``output_tokens_details``, ``iterations`` the length of ``iterations``, ``cost_usd`` null."""
    usage = raw if isinstance(raw, dict) else {}
    details = usage.get("output_tokens_details")
    iterations = usage.get("iterations")
    return Usage(
        input_tokens=stated_count(usage.get("input_tokens")),
        output_tokens=stated_count(usage.get("output_tokens")),
        cache_read_input_tokens=stated_count(usage.get("cache_read_input_tokens")),
        cache_creation_input_tokens=stated_count(usage.get("cache_creation_input_tokens")),
        service_tier=_text(usage.get("service_tier")),
        thinking_tokens=stated_count(details.get("thinking_tokens")) if isinstance(details, dict) else None,
        iterations=len(iterations) if isinstance(iterations, list) else None,
        speed=_text(usage.get("speed")),
        cost_usd=None,
    )


def model_usage_of(raw: Any) -> Usage:
    """One ``modelUsage`` entry as Usage (``costUSD`` → ``cost_usd``, camel-case counts copied)."""
    usage = raw if isinstance(raw, dict) else {}
    return Usage(
        input_tokens=stated_count(usage.get("inputTokens")),
        output_tokens=stated_count(usage.get("outputTokens")),
        cache_read_input_tokens=stated_count(usage.get("cacheReadInputTokens")),
        cache_creation_input_tokens=stated_count(usage.get("cacheCreationInputTokens")),
        service_tier=None,
        thinking_tokens=stated_count(usage.get("thinkingTokens")),
        iterations=None,
        speed=None,
        cost_usd=stated_amount(usage.get("costUSD")),
    )


def session_started(record: dict[str, Any], facts: SessionFacts) -> SessionStarted:
    """``session.started`` from ``system``/``init`` (docs/adapters/claude.md); a missing key is null, ``[]``
    stays ``[]``."""
    plugins = record.get("plugins")
    servers = record.get("mcp_servers")
    version = _text(record.get("claude_code_version"))
    return SessionStarted(
        adapter="claude",
        adapter_class="harness",
        harness_version=version if version is not None else facts.harness_version,
        session_id=_text(record.get("session_id")),
        model=_text(record.get("model")) or facts.model,
        permission_mode=_text(record.get("permissionMode")),
        credential_source=_text(record.get("apiKeySource")),
        output_style=_text(record.get("output_style")),
        cwd=_text(record.get("cwd")),
        offered_tools=_strings(record.get("tools")),
        withheld=None,
        slash_commands=_strings(record.get("slash_commands")),
        skills=_strings(record.get("skills")),
        agents=_strings(record.get("agents")),
        plugins=tuple(
            Plugin(name=_text(p.get("name")), source=_text(p.get("source")), version=_text(p.get("version")))
            for p in plugins
            if isinstance(p, dict)
        )
        if isinstance(plugins, list)
        else None,
        mcp_servers=tuple(
            McpServer(name=_text(s.get("name")), status=_text(s.get("status"))) for s in servers if isinstance(s, dict)
        )
        if isinstance(servers, list)
        else None,
        inputs_digest=facts.inputs_digest,
        transcript=facts.transcript,
        context_files=facts.context_files or UNSET,
        hermetic=facts.hermetic,
    )


def session_ended(record: dict[str, Any]) -> SessionEnded:
    """``session.ended`` from ``result`` (docs/adapters/claude.md), its census still empty."""
    denials = record.get("permission_denials")
    stats = record.get("subagent_stats")
    model_usage = record.get("modelUsage")
    api_status = record.get("api_error_status")
    return SessionEnded(
        final_answer=None,
        observed_models=None,
        is_error=_bool(record.get("is_error")),
        subtype=_text(record.get("subtype")),
        stop_reason=_text(record.get("stop_reason")),
        terminal_reason=_text(record.get("terminal_reason")),
        api_error_status=str(api_status) if isinstance(api_status, (str, int)) else None,
        num_turns=stated_count(record.get("num_turns")),
        duration_ms=stated_count(record.get("duration_ms")),
        duration_api_ms=stated_count(record.get("duration_api_ms")),
        ttft_ms=stated_count(record.get("ttft_ms")),
        time_to_request_ms=stated_count(record.get("time_to_request_ms")),
        total_cost_usd=stated_amount(record.get("total_cost_usd")),
        permission_denials=tuple(
            PermissionDenial(
                tool_name=_text(d.get("tool_name")), tool_use_id=_text(d.get("tool_use_id")), tool_input=d.get("tool_input")
            )
            for d in denials
            if isinstance(d, dict)
        )
        if isinstance(denials, list)
        else None,
        subagents_spawned=stated_count(stats.get("spawned")) if isinstance(stats, dict) else None,
        usage=usage_of(record["usage"]) if isinstance(record.get("usage"), dict) else None,
        model_usage={str(k): model_usage_of(v) for k, v in model_usage.items()}
        if isinstance(model_usage, dict)
        else None,
        census=ZERO_CENSUS,
    )


def _expiry_detail(record: dict[str, Any]) -> str | None:
    """The text holding an expiry phrase (docs/adapters/claude.md): ``result``, ``error``, ``error.message`` or a
    content block's ``text``/``content``, the first in that order."""
    error = record.get("error")
    texts = [record.get("result"), error, error.get("message") if isinstance(error, dict) else None]
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict):
            texts += (block.get("text"), block.get("content"))
    for text in texts:
        if isinstance(text, str) and _EXPIRY.search(text.lower()):
            return text
    return None


def _usage_event(state: RecordState, message: dict[str, Any], request_id: str | None) -> tuple[RecordState, list[Event]]:
    if "usage" not in message:
        return state, []
    usage = usage_of(message["usage"])
    message_id = _text(message.get("id"))
    if message_id is not None:
        if state.usage_seen.get(message_id) == usage:
            return state, []
        state = msgspec.structs.replace(state, usage_seen=state.usage_seen.set(message_id, usage))
    return state, [UsageReported(request_id=request_id, model=_text(message.get("model")), usage=usage)]


def _assistant(
    state: RecordState, record: dict[str, Any], raw: bytes, source_line: int, catalogue: Catalogue | None
) -> tuple[RecordState, list[Mapped]]:
    at = _at(record)
    message = record.get("message")
    if not isinstance(message, dict):
        return state, [Emitted(opaque(raw, record, source_line), at)]
    request_id = _text(record.get("request_id")) or _text(record.get("requestId"))
    items: list[Mapped] = []
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            items.append(Emitted(Text(text=block["text"], request_id=request_id), at))
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            items.append(Emitted(Thinking(text=block["thinking"], request_id=request_id), at))
        elif kind == "tool_use" and isinstance(block.get("id"), str):
            name = block.get("name") if isinstance(block.get("name"), str) else ""
            requested = claude_request(block["id"], name, block.get("input"), state.cwd, catalogue)
            items.append(Announced(block["id"], requested, at))
        else:
            items.append(Emitted(opaque(raw, record, source_line), at))
    state, usage = _usage_event(state, message, request_id)
    return state, items + [Emitted(event, at) for event in usage]


def _content_bytes(content: Any) -> int | None:
    if content is None:
        return None
    if isinstance(content, str):
        return len(content.encode("utf-8"))
    return len(compact(content))


def claude_request(
    call_id: str, name: str, call_input: Any, cwd: str | None, catalogue: Catalogue | None
) -> ToolRequested:
    """A call as the record states it (docs/adapters/common.md#one-event-per-call (b)): its operations and subjects,
    seam ``none``, nothing to decide."""
    operations, subjects = resolve_claude_call(name, call_input, cwd, catalogue)
    return ToolRequested(
        call_id=call_id,
        name=name,
        input=call_input,
        operations=tuple(dict.fromkeys(op.op for op in operations)) or UNSET,
        subjects=subjects or UNSET,
        decision_required=False,
        deadline_ms=None,
        seam="none",
    )


def _user(record: dict[str, Any], raw: bytes, source_line: int) -> list[Mapped]:
    at = _at(record)
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    origin = "synthetic" if record.get("isSynthetic") is True else "user"
    if isinstance(content, str):
        return [Emitted(Injection(text=content, origin=origin), at)]
    if not isinstance(content, list):
        return [Emitted(opaque(raw, record, source_line), at)]
    items: list[Mapped] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
            result = block.get("content")
            items.append(
                Finished(
                    block["tool_use_id"],
                    ToolResult(
                        exit_code=None,
                        outcome_source=None,
                        call_id=block["tool_use_id"],
                        is_error=_bool(block.get("is_error")),
                        content=result,
                        bytes=_content_bytes(result),
                        tool_use_result=record.get("tool_use_result"),
                    ),
                    at,
                )
            )
        elif kind == "text" and isinstance(block.get("text"), str):
            items.append(Emitted(Injection(text=block["text"], origin=origin), at))
        else:
            items.append(Emitted(opaque(raw, record, source_line), at))
    return items


def _rate_limit(record: dict[str, Any]) -> RateLimit:
    info = record.get("rate_limit_info")
    info = info if isinstance(info, dict) else record
    return RateLimit(
        info=RateLimitInfo(
            status=_text(info.get("status")),
            window=_text(info.get("rateLimitType")),
            resets_at=stated_count(info.get("resetsAt")),
            utilization=stated_amount(info.get("utilization")),
            using_overage=_bool(info.get("isUsingOverage")),
        )
    )


def version_off_pin(version: str) -> WarningRaised:
    """``VERSION_OFF_PIN`` read from the opening record (docs/events.md#warning-codes)."""
    return WarningRaised(
        code="VERSION_OFF_PIN",
        message=f"claude reports {version}; the adapter is pinned to {', '.join(PINS)}, so this run is unverified "
        "rather than refused",
    )


def _system(
    state: RecordState, record: dict[str, Any], raw: bytes, source_line: int, facts: SessionFacts
) -> tuple[RecordState, list[Mapped]]:
    subtype = record.get("subtype")
    at = _at(record)
    if subtype == "init" and not state.started:
        started = session_started(record, facts)
        state = msgspec.structs.replace(
            state, started=True, credential_source=started.credential_source, cwd=started.cwd
        )
        items: list[Mapped] = []
        if started.harness_version is not None and started.harness_version not in PINS:
            items.append(Emitted(version_off_pin(started.harness_version), at))
        return state, [*items, Emitted(started, at)]
    if subtype == "thinking_tokens" and stated_count(record.get("estimated_tokens")) is not None:
        estimate = ThinkingEstimate(
            estimate=record["estimated_tokens"], delta=_int(record.get("estimated_tokens_delta"))
        )
        return state, [Emitted(estimate, at)]
    if subtype == "api_retry":
        attempt, status = record.get("attempt"), record.get("error_status")
        message = f"Claude Code retried an API request: attempt {attempt}, status {status}"
        return state, [Emitted(WarningRaised(code="VENDOR_API_RETRY", message=message), at)]
    return state, [Emitted(opaque(raw, record, source_line), at)]


def map_record(
    state: RecordState, raw: bytes, source_line: int, facts: SessionFacts
) -> tuple[RecordState, tuple[Mapped, ...]]:
    """One transcript line (without its terminator) as mapped items (docs/adapters/claude.md#record-mapping).

    Blank lines emit nothing; a line that is not a JSON object or has an unknown ``type`` is
    ``opaque``; an expiry phrase first emits ``auth.expired``.
    """
    if not raw.strip():
        return state, ()
    try:
        record = decode_bounded(raw)
    except msgspec.DecodeError:
        record = None
    if not isinstance(record, dict):
        return state, (Emitted(opaque(raw, record, source_line)),)
    kind = record.get("type")
    items: list[Mapped] = []
    if kind in ("assistant", "user", "result", "system"):
        detail = _expiry_detail(record)
        if detail is not None:
            expired = AuthExpired(credential_source=state.credential_source, detail=detail, source_line=source_line)
            items.append(Emitted(expired, _at(record)))
    if kind == "system":
        state, mapped = _system(state, record, raw, source_line, facts)
    elif kind == "assistant":
        state, mapped = _assistant(state, record, raw, source_line, facts.catalogue)
    elif kind == "user":
        mapped = _user(record, raw, source_line)
    elif kind == "rate_limit_event":
        mapped = [Emitted(_rate_limit(record), _at(record))]
    elif kind == "result" and not state.ended:
        state = msgspec.structs.replace(state, ended=True)
        mapped = [Emitted(session_ended(record), _at(record))]
    else:
        mapped = [Emitted(opaque(raw, record, source_line), _at(record))]
    return state, (*items, *mapped)


def terminal_stop(ended: SessionEnded | None) -> str | None:
    """The terminal record's stop word for ``metaharness.pure.run_stages.closing_reason``
    (docs/events.md#stream-ending): a budget word among ``subtype``, ``stop_reason``, ``terminal_reason``; else
    ``error`` when ``is_error`` is true, whatever the subtype (Claude Code ends a failed API call ``is_error:true,
    subtype:"success"``); else ``completed`` when ``is_error`` is false or ``subtype`` is ``success``;
    else ``error``; ``None`` with no ``result``."""
    if ended is None:
        return None
    words = [w for w in (ended.subtype, ended.stop_reason, ended.terminal_reason) if w in BUDGET_WORDS]
    if words:
        return words[0]
    if ended.is_error is True:
        return "error"
    return "completed" if ended.is_error is False or ended.subtype == "success" else "error"
