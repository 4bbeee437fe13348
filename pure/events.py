r"""The neutral event stream ``metaharness.event/1`` (docs/events.md#serialisation, #the-twenty-events,
#warning-codes, #stream-ending).

Every payload is a frozen struct tagged by its event name; sessions and readers emit :class:`EventValue`\ s,
which the stream's writer (``metaharness.pure.stream_writer``) numbers and encodes; ``encode_event`` writes the exact bytes of docs/events.md#serialisation, #the-twenty-events (framing keys
first, payload fields in the order of docs/events.md#the-twenty-events, explicit nulls, the five omittable keys,
``session.ended.route`` and ``census.bypassed`` left out when ``UNSET``), and ``read_event``
refuses a line with the messages of docs/events.md#reading-a-stream and ignores unknown fields.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Annotated, Any, Literal, TypeAlias, cast

import msgspec
from immutables import Map
from msgspec import UNSET, Struct, UnsetType
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.jsonline import compact

EVENT_FORMAT = "metaharness.event/1"


class _Value(Struct, frozen=True, kw_only=True, forbid_unknown_fields=False):
    """A shared value shape (docs/events.md#value-shapes): every field is written, nulls explicit."""


class Usage(_Value, frozen=True, kw_only=True):
    """Token usage of one request or model (docs/events.md#value-shapes); metaharness never computes ``cost_usd``."""

    input_tokens: int | None
    output_tokens: int | None
    cache_read_input_tokens: int | None
    cache_creation_input_tokens: int | None
    service_tier: str | None
    thinking_tokens: int | None
    iterations: int | None
    speed: str | None
    cost_usd: float | None


class Census(_Value, frozen=True, kw_only=True):
    """Decisions counted by kind, seam and decider (docs/events.md#census); the maps hold non-zero counts only."""

    allowed: int
    denied: int
    replaced: int
    abstained: int
    by_seam: dict[str, int]
    by_decider: dict[str, int]
    bypassed: int | UnsetType = UNSET
    """Calls metaharness denied whose result was not an error (``DECISION_BYPASSED``); written only
    when there was one."""


class RouteCalls(_Value, frozen=True, kw_only=True):
    """The route witness's count (docs/decisions.md#the-route-witness): the calls the model emitted,
    how many of them the stream requested and decided, and how many of those on the input emitted."""

    emitted: int
    decided: int
    reconciled: int


class RouteTraffic(_Value, frozen=True, kw_only=True):
    """What crossed the model route of a confined run: requests forwarded and their bytes; ``calls``
    is the witness's count, written when the run's stream was reconciled with the route."""

    requests: int
    bytes_up: int
    bytes_down: int
    calls: RouteCalls | UnsetType = UNSET


class RowCheck(_Value, frozen=True, kw_only=True):
    """One hermetic row as the run's audit checks it against the record (docs/events.md#census)."""

    row: str
    verdict: Literal["ok", "gap", "unk"]
    detail: str


class Allow(Struct, frozen=True, tag_field="decision", tag="allow"):
    """The call runs; on hook wires it grants (docs/decisions.md#vocabulary)."""


class Deny(Struct, frozen=True, tag_field="decision", tag="deny"):
    """The call is refused; ``reason`` is what the model is told (docs/decisions.md#vocabulary)."""

    reason: str


class Replace(Struct, frozen=True, tag_field="decision", tag="replace"):
    """The call runs with ``input`` instead (docs/decisions.md#vocabulary)."""

    input: Any


class Abstain(Struct, frozen=True, tag_field="decision", tag="abstain"):
    """metaharness claims nothing; the harness's own permission pipeline decides (docs/decisions.md#vocabulary)."""


Decision: TypeAlias = Allow | Deny | Replace | Abstain


class StepRef(_Value, frozen=True, kw_only=True):
    """Which workflow step a frame or step event belongs to (docs/events.md#value-shapes)."""

    workflow: str
    state: str
    index: int
    attempt: int


class Completed(Struct, frozen=True, tag_field="outcome", tag="completed"):
    """A step that completed (docs/events.md#value-shapes StepOutcome)."""


class Failed(Struct, frozen=True, tag_field="outcome", tag="failed"):
    """A step that failed, and why (docs/events.md#value-shapes StepOutcome)."""

    reason: str


class NoVerdict(Struct, frozen=True, tag_field="outcome", tag="no_verdict"):
    """A step nobody could judge, and why (docs/events.md#value-shapes StepOutcome)."""

    reason: str


StepOutcome: TypeAlias = Completed | Failed | NoVerdict


class Transcript(_Value, frozen=True, kw_only=True):
    """Where the retained vendor record is, with its digest and size when known (docs/events.md#value-shapes)."""

    path: str | None
    digest: str | None
    bytes: int | None


class RowHow(_Value, frozen=True, kw_only=True):
    """An ``imposed`` or ``declared`` attestation entry (docs/hermetic.md#terms)."""

    row: str
    how: str


class RowWhy(_Value, frozen=True, kw_only=True):
    """An ``unavailable`` attestation entry (docs/hermetic.md#terms)."""

    row: str
    why: str


class InstalledPlugin(_Value, frozen=True, kw_only=True):
    """A plugin copy the launch placed (docs/hermetic.md#attestation)."""

    name: str
    source: str
    version: str | None


class Hermetic(_Value, frozen=True, kw_only=True):
    """The attestation block of ``session.started`` (docs/events.md#value-shapes, docs/hermetic.md#attestation)."""

    mode: Literal["off", "on", "strict"]
    decisions: Literal["frame", "ask", "observe"]
    imposed: tuple[RowHow, ...]
    declared: tuple[RowHow, ...]
    unavailable: tuple[RowWhy, ...]
    ambient_inputs: tuple[str, ...]
    installed_plugins: tuple[InstalledPlugin, ...]


class ContextFile(_Value, frozen=True, kw_only=True):
    """One ``--context`` file as it reached the model (docs/events.md#value-shapes, docs/hermetic.md#context-record)."""

    path: str
    sha256: str
    bytes: int
    channel: str


class Withheld(_Value, frozen=True, kw_only=True):
    """A tool the machine would not admit, and why (docs/events.md#the-twenty-events)."""

    tool: str
    reason: str


class Plugin(_Value, frozen=True, kw_only=True):
    """A plugin the harness reports loaded (docs/events.md#the-twenty-events)."""

    name: str | None
    source: str | None
    version: str | None


class McpServer(_Value, frozen=True, kw_only=True):
    """An MCP server the harness reports (docs/events.md#the-twenty-events)."""

    name: str | None
    status: str | None


class FinalAnswer(_Value, frozen=True, kw_only=True):
    """The run's final answer text (docs/events.md#the-twenty-events)."""

    text: str
    turn_id: str | None


class ObservedModel(_Value, frozen=True, kw_only=True):
    """A model the record shows answering (docs/events.md#the-twenty-events)."""

    turn: int | None
    turn_id: str | None
    model: str
    scope: str


class PermissionDenial(_Value, frozen=True, kw_only=True):
    """A call the vendor reports it denied (docs/events.md#the-twenty-events)."""

    tool_name: str | None
    tool_use_id: str | None
    tool_input: Any


class RateLimitInfo(_Value, frozen=True, kw_only=True):
    """The vendor's rate-limit report (docs/events.md#the-twenty-events)."""

    status: str | None
    window: str | None
    resets_at: int | None
    utilization: float | None
    using_overage: bool | None


class RefusedCommand(_Value, frozen=True, kw_only=True):
    """Why a command was refused: an upper-case code and a reason (docs/events.md#commands)."""

    code: str
    reason: str


class CommandOk(Struct, frozen=True, tag_field="result", tag="ok"):
    """A command that took effect, and when it applies (docs/events.md#value-shapes)."""

    applies_at: str | None


class CommandRefused(Struct, frozen=True, tag_field="result", tag="refused"):
    """A command that was refused (docs/events.md#value-shapes)."""

    refused: RefusedCommand


CommandOutcome: TypeAlias = CommandOk | CommandRefused


class Exited(Struct, frozen=True, tag_field="kind", tag="exited"):
    """The child exited with ``code`` (docs/events.md#value-shapes Process)."""

    code: int


class Signaled(Struct, frozen=True, tag_field="kind", tag="signaled"):
    """The child was ended by ``signal`` (docs/events.md#value-shapes Process)."""

    signal: int


class UnknownProcess(Struct, frozen=True, tag_field="kind", tag="unknown"):
    """No child ran, or its status could not be read (docs/events.md#value-shapes Process)."""


Process: TypeAlias = Exited | Signaled | UnknownProcess


class _Event(Struct, frozen=True, kw_only=True, tag_field="event", forbid_unknown_fields=False):
    """An event payload; the tag is the event name of docs/events.md#the-twenty-events."""


class SessionStarted(_Event, frozen=True, tag="session.started", kw_only=True):
    """The run's opening record (docs/events.md#the-twenty-events)."""

    adapter: str
    adapter_class: str
    harness_version: str | None
    program: str | UnsetType = UNSET
    """The resolved path of the program the run started; absent in a replay, which started none."""
    session_id: str | None
    model: str | None
    permission_mode: str | None
    credential_source: str | None
    output_style: str | None
    cwd: str | None
    offered_tools: tuple[str, ...] | None
    available_operations: tuple[str, ...] | UnsetType = UNSET
    withheld: tuple[Withheld, ...] | None
    slash_commands: tuple[str, ...] | None
    skills: tuple[str, ...] | None
    agents: tuple[str, ...] | None
    plugins: tuple[Plugin, ...] | None
    mcp_servers: tuple[McpServer, ...] | None
    inputs_digest: str | None
    transcript: Transcript
    context_files: tuple[ContextFile, ...] | UnsetType = UNSET
    hermetic: Hermetic


class SessionEnded(_Event, frozen=True, tag="session.ended", kw_only=True):
    """The harness's terminal record, with the decision census (docs/events.md#the-twenty-events)."""

    final_answer: FinalAnswer | None
    observed_models: tuple[ObservedModel, ...] | None
    is_error: bool | None
    subtype: str | None
    stop_reason: str | None
    terminal_reason: str | None
    api_error_status: str | None
    num_turns: int | None
    duration_ms: int | None
    duration_api_ms: int | None
    ttft_ms: int | None
    time_to_request_ms: int | None
    total_cost_usd: float | None
    permission_denials: tuple[PermissionDenial, ...] | None
    subagents_spawned: int | None
    usage: Usage | None
    model_usage: dict[str, Usage] | None
    census: Census
    route: RouteTraffic | UnsetType = UNSET
    """The model route's traffic under confinement; absent under ``--confine off``."""
    rows: tuple[RowCheck, ...] | UnsetType = UNSET
    """Every hermetic row's verdict as the audit computes it, added by a live run; absent in replay."""


class StepEntered(_Event, frozen=True, tag="step.entered", kw_only=True):
    """A workflow step began (docs/events.md#the-twenty-events; no verb of this version emits it)."""

    step: StepRef
    frame_digest: str | None


class StepLeft(_Event, frozen=True, tag="step.left", kw_only=True):
    """A workflow step ended (docs/events.md#the-twenty-events; no verb of this version emits it)."""

    step: StepRef
    outcome: StepOutcome


class TurnStarted(_Event, frozen=True, tag="turn.started", kw_only=True):
    """A model turn began under the frame in force (docs/events.md#the-twenty-events)."""

    turn: int
    frame_digest: str | None


class TurnEnded(_Event, frozen=True, tag="turn.ended", kw_only=True):
    """A model turn ended (docs/events.md#the-twenty-events)."""

    turn: int
    stop_reason: str | None


class Text(_Event, frozen=True, tag="text", kw_only=True):
    """Assistant text (docs/events.md#the-twenty-events)."""

    text: str
    request_id: str | None


class Thinking(_Event, frozen=True, tag="thinking", kw_only=True):
    """Assistant reasoning text (docs/events.md#the-twenty-events)."""

    text: str
    request_id: str | None


class ThinkingEstimate(_Event, frozen=True, tag="thinking.estimate", kw_only=True):
    """An estimate of reasoning tokens (docs/events.md#the-twenty-events)."""

    estimate: int
    delta: int | None


class Injection(_Event, frozen=True, tag="injection", kw_only=True):
    """Text placed between turns (docs/events.md#the-twenty-events)."""

    text: str
    origin: str | None


class ToolRequested(_Event, frozen=True, tag="tool.requested", kw_only=True, gc=False):
    """A tool call, written before any decision or effect (docs/events.md#the-twenty-events); untracked by the
    cyclic collector, ``input`` a decoded JSON value (docs/DEVELOPING.md#untracked-state)."""

    call_id: str
    name: str
    input: Any
    operations: tuple[str, ...] | UnsetType = UNSET
    subjects: tuple[str, ...] | UnsetType = UNSET
    decision_required: bool
    deadline_ms: int | None
    seam: str


class ToolDecided(_Event, frozen=True, tag="tool.decided", kw_only=True):
    """Who decided a call, on which seam, and what (docs/events.md#the-twenty-events; docs/decisions.md)."""

    call_id: str
    decision: Decision
    decided_by: str
    seam: str
    latency_ms: int | None


class ToolResult(_Event, frozen=True, tag="tool.result", kw_only=True, gc=False):
    """A call's outcome (docs/events.md#the-twenty-events); untracked by the cyclic collector, ``content`` and
    ``tool_use_result`` decoded JSON values (docs/DEVELOPING.md#untracked-state)."""

    exit_code: int | None
    outcome_source: str | None
    call_id: str
    is_error: bool | None
    content: Any | None
    bytes: int | None
    tool_use_result: Any | None


class UsageReported(_Event, frozen=True, tag="usage", kw_only=True):
    """Token usage of one request (docs/events.md#the-twenty-events)."""

    request_id: str | None
    model: str | None
    usage: Usage


class RateLimit(_Event, frozen=True, tag="rate_limit", kw_only=True):
    """A rate-limit report (docs/events.md#the-twenty-events)."""

    info: RateLimitInfo


class CommandResult(_Event, frozen=True, tag="command.result", kw_only=True):
    """The one answer to a ``metaharness.command/1`` line (docs/events.md#commands)."""

    id: str
    outcome: CommandOutcome


class WarningRaised(_Event, frozen=True, tag="warning", kw_only=True, gc=False):
    """A warning with its code (docs/events.md#warning-codes); untracked by the cyclic collector."""

    code: str
    message: str


class Opaque(_Event, frozen=True, tag="opaque", kw_only=True):
    """A record the adapter could not read, never dropped (docs/events.md#the-twenty-events)."""

    vendor_type: str | None
    vendor_subtype: str | None
    digest: str
    source_line: int | None


class AuthExpired(_Event, frozen=True, tag="auth.expired", kw_only=True):
    """The vendor reported an expired credential; never ends a run (docs/events.md#the-twenty-events)."""

    credential_source: str | None
    detail: str | None
    source_line: int | None


class StreamClosed(_Event, frozen=True, tag="stream.closed", kw_only=True):
    """The stream's closing marker, written last and once (docs/events.md#stream-ending)."""

    events: int
    reason: str
    run_id: str
    process: Process


Event: TypeAlias = (
    SessionStarted
    | SessionEnded
    | StepEntered
    | StepLeft
    | TurnStarted
    | TurnEnded
    | Text
    | Thinking
    | ThinkingEstimate
    | Injection
    | ToolRequested
    | ToolDecided
    | ToolResult
    | UsageReported
    | RateLimit
    | CommandResult
    | WarningRaised
    | Opaque
    | AuthExpired
    | StreamClosed
)

EVENT_TYPES: dict[str, type[Any]] = {
    str(cls.__struct_config__.tag): cls
    for cls in (
        SessionStarted,
        SessionEnded,
        StepEntered,
        StepLeft,
        TurnStarted,
        TurnEnded,
        Text,
        Thinking,
        ThinkingEstimate,
        Injection,
        ToolRequested,
        ToolDecided,
        ToolResult,
        UsageReported,
        RateLimit,
        CommandResult,
        WarningRaised,
        Opaque,
        AuthExpired,
        StreamClosed,
    )
}
"""The twenty event names of docs/events.md#the-twenty-events, each with its payload struct."""


def event_name(payload: Event) -> str:
    """The event name a payload is written under."""
    return str(type(payload).__struct_config__.tag)


class EventLine(Struct, frozen=True, kw_only=True):
    """One read event line: its framing keys and its payload (docs/events.md#framing-keys)."""

    seq: int
    run: str
    at: str | UnsetType = UNSET
    payload: Event


class Stream(Struct, frozen=True):
    """How many events a run's stream has counted (``note``; the writer, ``metaharness.pure.stream_writer``, is the
    one place ``seq`` is assigned).
    ``unended`` holds the calls written with a ``tool.requested`` and no ``tool.result`` yet, each with the count
    of events before its request, which orders them (``result_unobserved`` names them at session end in the order
    they were requested); a persistent map, so noting a call costs the same however many are open."""

    run: str
    written: int = 0
    unended: Map[str, int] = Map()


def _unended(unended: Map[str, int], written: int, payload: Event) -> Map[str, int]:
    """``unended`` after ``payload``, the event counted after ``written`` others."""
    kind = type(payload)
    if kind is ToolRequested:
        call_id = cast(ToolRequested, payload).call_id
        return unended if call_id in unended else unended.set(call_id, written)
    if kind is ToolResult:
        call_id = cast(ToolResult, payload).call_id
        return unended.delete(call_id) if call_id in unended else unended
    return unended


def open_calls(stream: Stream) -> tuple[str, ...]:
    """The calls requested and never ended, in the order they were requested."""
    return tuple(sorted(stream.unended, key=stream.unended.__getitem__))


_CALL_EVENTS = (ToolRequested, ToolResult)


def result_unobserved(stream: Stream) -> WarningRaised | None:
    """``RESULT_UNOBSERVED`` at session end, naming every call that got a ``tool.requested`` and never
    a ``tool.result``; ``None`` when every call ended."""
    if not stream.unended:
        return None
    return WarningRaised(
        code="RESULT_UNOBSERVED",
        message=f"no result was observed for {', '.join(open_calls(stream))}: the harness recorded no outcome for "
        "these calls, so whether they ran is unknown",
    )


def _sorted_maps(payload: SessionEnded) -> SessionEnded:
    """Maps keyed by data are written sorted by key (docs/events.md#serialisation rule 4): ``session.ended``'s."""
    census = msgspec.structs.replace(
        payload.census,
        by_seam=dict(sorted(payload.census.by_seam.items())),
        by_decider=dict(sorted(payload.census.by_decider.items())),
    )
    model_usage = None if payload.model_usage is None else dict(sorted(payload.model_usage.items()))
    return msgspec.structs.replace(payload, census=census, model_usage=model_usage)


@functools.lru_cache(maxsize=64)
def _line_template(run: str) -> bytes:
    """One run's line as a ``%`` template (docs/events.md#framing-keys): the framing keys with ``run`` encoded once,
    then ``seq``, the ``at`` key (or nothing) and the payload's keys after its opening brace."""
    return b'{"format":"metaharness.event/1","seq":%d,"run":' + compact(run).replace(b"%", b"%%") + b"%b,%b\n"


def encode_event(seq: int, run: str, payload: Event, at: str | UnsetType = UNSET) -> bytes:
    """The exact line of docs/events.md#serialisation, #the-twenty-events for one event, ``\\n`` included: the payload
    encoded once, its opening brace dropped, behind the run's framing keys."""
    dated = b"" if at is UNSET else b',"at":' + compact(at)
    body = compact(_sorted_maps(payload) if type(payload) is SessionEnded else payload)
    return _line_template(run) % (seq, dated, body[1:])


class EventValue(Struct, frozen=True):
    """One event as a session or a record reader emits it: its payload and its ``at`` (the record line's
    timestamp, verbatim); the stream's writer numbers and encodes it (``metaharness.pure.stream_writer``)."""

    payload: Event
    at: str | UnsetType = UNSET


def advanced(stream: Stream, payload: Event) -> Stream:
    """``stream`` with one more event counted, its call noted open or ended."""
    if type(payload) in _CALL_EVENTS:
        return Stream(stream.run, stream.written + 1, _unended(stream.unended, stream.written, payload))
    return Stream(stream.run, stream.written + 1, stream.unended)


def note(stream: Stream, payload: Event, at: str | UnsetType = UNSET) -> tuple[Stream, EventValue]:
    """``stream`` with one more event counted (``advanced``), and the event's value."""
    return advanced(stream, payload), EventValue(payload, at)


def note_each(stream: Stream, payloads: list[Event]) -> tuple[Stream, list[EventValue]]:
    """``note`` over ``payloads`` in order, none of them dated."""
    unended = stream.unended
    for index, payload in enumerate(payloads):
        if type(payload) in _CALL_EVENTS:
            unended = _unended(unended, stream.written + index, payload)
    return Stream(stream.run, stream.written + len(payloads), unended), [EventValue(payload) for payload in payloads]


def drained(out: bytearray) -> Iterator[bytes]:
    """What ``out`` holds, once, as one chunk (nothing when it is empty); ``out`` is left empty."""
    if out:
        yield bytes(out)
        out.clear()


def closed_reason(stream: bytes) -> str:
    """The closing reason of a whole stream, read from its last line, the ``stream.closed`` marker."""
    last = stream.rstrip(b"\n").rpartition(b"\n")[2]
    return msgspec.json.decode(last, type=StreamClosed).reason


def closing_marker(stream: Stream, reason: str, process: Process) -> StreamClosed:
    """The ``stream.closed`` payload for ``stream`` as it stands (docs/events.md#stream-ending: ``events`` =
    lines before it)."""
    return StreamClosed(events=stream.written, reason=reason, run_id=stream.run, process=process)


def _not_object(detail: str) -> Failure[str]:
    return Failure(f"not a JSON object: {detail}")


def _tag_text(tag: object) -> str:
    return tag if isinstance(tag, str) else "<not a string>"


def read_event(line: bytes | str) -> Result[EventLine, str]:
    """Read one event line, refusing with the messages of docs/events.md#reading-a-stream; unknown fields
    are ignored."""
    try:
        raw = decode_bounded(line)
    except (msgspec.DecodeError, RecursionError, UnicodeEncodeError) as error:
        return _not_object(str(error))
    if not isinstance(raw, dict):
        return _not_object("the document is JSON but not an object")
    if "format" not in raw:
        return Failure(f'no format tag, expected "{EVENT_FORMAT}"')
    if raw["format"] != EVENT_FORMAT:
        return Failure(f'unknown format tag "{_tag_text(raw["format"])}", expected "{EVENT_FORMAT}"')
    name = raw.get("event")
    payload_type = EVENT_TYPES.get(name) if isinstance(name, str) else None
    if payload_type is None:
        return Failure(f'unknown event name "{_tag_text(name)}"')
    try:
        framing = msgspec.convert(raw, type=_Framing)
        payload = msgspec.convert(raw, type=payload_type)
    except msgspec.ValidationError as error:
        return Failure(f"malformed {name}: {error}")
    return Success(EventLine(seq=framing.seq, run=framing.run, at=framing.at, payload=payload))


class _Framing(Struct, frozen=True, forbid_unknown_fields=False):
    seq: Annotated[int, msgspec.Meta(ge=1)]
    run: str
    at: str | UnsetType = UNSET
