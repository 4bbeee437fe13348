"""The route witness: what the model emitted and what the harness sent back, read from the model route
outside the view, reconciled with the run's stream at its end (docs/decisions.md#the-route-witness).

``read_exchange(path, body, response)`` decodes one model exchange with the wire's decoders (the table
``WITNESS_WIRES``, keyed by wire): the tool calls the model emitted (call id, name, input) and every
tool result the request carried (call id, ``is_error``, text), plus the answer of an end-of-turn
response. ``witness`` folds exchanges into a ``RouteAccount``; ``reconcile`` compares it with the
stream's ``StreamAccount`` (kept by ``observe_event``) and names ``COVERAGE_GAP``,
``DECISION_LAUNDERED``, ``DECISION_BYPASSED`` and ``RECORD_FORGED``, with ``RouteCalls`` for
``session.ended.route.calls``. Everything here is a function of bytes and events, so a retained
exchange replays the same way.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

import msgspec
from immutables import Map

from metaharness.pure.adapter import WitnessFacts
from metaharness.pure.events import Deny, Event, RouteCalls, SessionEnded, ToolDecided, ToolRequested, WarningRaised
from metaharness.pure.jsonline import compact
from metaharness.pure.wires import anthropic_messages, google_generative, openai_responses
from metaharness.pure.wires.neutral import Opaque, Outcome, ToolCall
from metaharness.pure.wires.projection import decode_payload, parse_arguments
from metaharness.pure.wires.sse import frame_sse

MAX_RESULTS_PER_CALL = 8
"""Distinct results kept per call id (a harness resending history sends the same ones again)."""
MAX_DECODED_BODY = 64 * 1024 * 1024
"""A compressed response is inflated at most this far."""
WITNESS_GATING = frozenset({"COVERAGE_GAP", "DECISION_LAUNDERED", "RECORD_FORGED"})
"""The witness's codes that make an audited run's control verdict ``gap`` (``DECISION_BYPASSED`` is
counted in ``census.bypassed``)."""

WITNESS_BLIND = "ROUTE_UNREAD"
"""The witness's code that makes an audited run's control verdict ``unk`` when nothing made it ``gap``: a
response it could not read holds calls nobody checked."""


class EmittedCall(msgspec.Struct, frozen=True, gc=False):
    """A tool call as the model emitted it; ``numbered``: the wire gave it no id, so its ``call_id`` is its
    number in the response (``<name>#<n>``), made the account's own when it is folded in. Untracked by the
    cyclic collector: ``input`` is a decoded JSON value, which holds no struct (docs/DEVELOPING.md#untracked-state)."""

    call_id: str
    name: str
    input: Any
    numbered: bool = False


class SentResult(msgspec.Struct, frozen=True, gc=False):
    """A tool result as the harness sent it to the model; ``is_error`` is ``None`` on a wire without it.
    Untracked by the cyclic collector (docs/DEVELOPING.md#untracked-state)."""

    call_id: str
    is_error: bool | None
    text: str


class Exchange(msgspec.Struct, frozen=True):
    """One model exchange as the route saw it; ``decoded`` is false when the response was unreadable."""

    calls: tuple[EmittedCall, ...]
    results: tuple[SentResult, ...]
    answer: str | None
    decoded: bool = True


class WitnessWire(msgspec.Struct, frozen=True):
    """One wire's two decoders: the request body's results, the response body's calls and answer."""

    results: Callable[[bytes], tuple[SentResult, ...]]
    response: Callable[[bytes], tuple[tuple[EmittedCall, ...], str | None, bool]]


def _text(value: Any) -> str:
    """A result's content as text: a string, or the text parts of a list of blocks."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_text(part.get("text")) if isinstance(part, dict) else "" for part in value)
    return ""


class _Block(msgspec.Struct):
    type: Any = None
    tool_use_id: Any = None
    content: Any = None
    is_error: Any = None


class _Message(msgspec.Struct):
    content: list[_Block] | str | None = None


class _MessagesBody(msgspec.Struct):
    messages: list[_Message] = []


class _Item(msgspec.Struct):
    type: Any = None
    call_id: Any = None
    output: Any = None


class _ResponsesBody(msgspec.Struct):
    input: list[_Item] | str | None = None


class _Part(msgspec.Struct):
    response: Any = msgspec.field(default=None, name="functionResponse")


class _Content(msgspec.Struct):
    parts: list[_Part] | None = None


class _GenerateBody(msgspec.Struct):
    contents: list[_Content] | None = None


_MESSAGES = msgspec.json.Decoder(_MessagesBody)
_RESPONSES = msgspec.json.Decoder(_ResponsesBody)
_GENERATE = msgspec.json.Decoder(_GenerateBody)


def _messages_results(body: bytes) -> tuple[SentResult, ...]:
    try:
        messages = _MESSAGES.decode(body).messages
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ()
    return tuple(
        SentResult(block.tool_use_id, block.is_error is True, _text(block.content))
        for message in messages
        if isinstance(message.content, list)
        for block in message.content
        if block.type == "tool_result" and isinstance(block.tool_use_id, str)
    )


def _responses_results(body: bytes) -> tuple[SentResult, ...]:
    try:
        items = _RESPONSES.decode(body).input
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ()
    return tuple(
        SentResult(item.call_id, None, _text(item.output))
        for item in (items if isinstance(items, list) else ())
        if item.type in ("function_call_output", "custom_tool_call_output") and isinstance(item.call_id, str)
    )


def _generative_results(body: bytes) -> tuple[SentResult, ...]:
    """Each ``functionResponse`` part of a Generative Language request: its ``id`` (the one the harness gave the
    call), no ``is_error`` on this wire, its ``response`` object as compact JSON text."""
    try:
        contents = _GENERATE.decode(body).contents
    except (msgspec.DecodeError, msgspec.ValidationError):
        return ()
    return tuple(
        SentResult(part.response["id"], None, compact(part.response.get("response")).decode())
        for content in contents or ()
        for part in content.parts or ()
        if isinstance(part.response, dict) and isinstance(part.response.get("id"), str)
    )


def _outcome_calls(outcome: Outcome) -> tuple[tuple[EmittedCall, ...], str | None]:
    calls: list[EmittedCall] = []
    texts: list[str] = []
    for item in outcome.items:
        if isinstance(item, ToolCall):
            calls.append(EmittedCall(item.call_id, item.name, item.arguments))
        elif isinstance(item, Opaque) and isinstance(item.payload, dict) and item.payload.get("type") == "custom_tool_call":
            payload = item.payload
            calls.append(EmittedCall(_text(payload.get("call_id")), _text(payload.get("name")), _text(payload.get("input"))))
        elif not isinstance(item, Opaque):
            texts.append(getattr(item, "text", ""))
    answer = "".join(texts) if outcome.stop.kind == "end-turn" and not calls else None
    return tuple(calls), answer


def _message_body(value: dict[str, Any]) -> tuple[tuple[EmittedCall, ...], str | None]:
    """A whole (not streamed) Messages answer."""
    blocks = [block for block in value.get("content") or () if isinstance(block, dict)]
    calls = tuple(EmittedCall(_text(b.get("id")), _text(b.get("name")), b.get("input")) for b in blocks
                  if b.get("type") == "tool_use")  # fmt: skip
    texts = "".join(_text(b.get("text")) for b in blocks if b.get("type") == "text")
    return calls, (texts if not calls and value.get("stop_reason") in ("end_turn", None) else None)


def _response_body(value: dict[str, Any]) -> tuple[tuple[EmittedCall, ...], str | None]:
    """A whole (not streamed) Responses answer."""
    calls: list[EmittedCall] = []
    texts: list[str] = []
    for item in value.get("output") or ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            ok, arguments = parse_arguments(_text(item.get("arguments")))
            calls.append(EmittedCall(_text(item.get("call_id")), _text(item.get("name")), arguments if ok else None))
        elif item.get("type") == "custom_tool_call":
            calls.append(EmittedCall(_text(item.get("call_id")), _text(item.get("name")), _text(item.get("input"))))
        elif item.get("type") == "message":
            texts.append(_text(item.get("content")))
    return tuple(calls), ("".join(texts) if not calls and value.get("status") == "completed" else None)


def _generated_body(value: dict[str, Any]) -> tuple[tuple[EmittedCall, ...], str | None]:
    """A whole (not streamed) ``GenerateContentResponse``, read as the one chunk of a stream."""
    for event in google_generative.decode_stream(frame_sse((b"data: " + compact(value) + b"\n\n",)), ""):
        if isinstance(event, Outcome):
            return _outcome_calls(event)
    return (), None


_SDK_FRAME = re.compile("[\\s\ufeff]*data: ([^\n\r\u2028\u2029]*)(?:\n\n|\r\r|\r\n\r\n)")
"""One frame as Gemini CLI's client (the ``@google/genai`` stream reader) matches it at the front of what is left:
leading white space, ``data: ``, one line as JavaScript's ``.`` reads it, a blank line."""


def _as_javascript(text: str) -> Any:
    """``text`` parsed as ``JSON.parse`` accepts it (a lone surrogate, a number past a float's range), or ``None``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _chunks_as_read(body: bytes) -> list[Any]:
    """The chunks Gemini CLI reads from a response: a whole JSON answer, or each frame its stream reader matches."""
    text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    if text.lstrip()[:1] == "{":
        return [_as_javascript(text)]
    chunks, at = [], 0
    while (frame := _SDK_FRAME.match(text, at)) is not None:
        chunks.append(_as_javascript(frame.group(1)))
        at = frame.end()
    return chunks


def _calls_as_run(chunks: list[Any]) -> tuple[EmittedCall, ...]:
    """Every call Gemini CLI takes from a response (docs/decisions.md#the-route-witness): each part of the first
    candidate holding a ``functionCall`` with a name, in every chunk, whatever else the part holds and whether or
    how the stream finished; an id-less call is numbered ``<name>#<n>`` (``numbered``), as the decoder numbers it."""
    calls: list[EmittedCall] = []
    for chunk in chunks:
        candidates = chunk.get("candidates") if isinstance(chunk, dict) else None
        first = candidates[0] if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict) else {}
        content = first.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else ():
            call = part.get("functionCall") if isinstance(part, dict) else None
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                stated, args = call.get("id"), call.get("args")
                named = isinstance(stated, str) and bool(stated)
                call_id = stated if isinstance(stated, str) and stated else f"{call['name']}#{len(calls) + 1}"
                calls.append(EmittedCall(call_id, call["name"],
                                         {} if args is None else args, numbered=not named))  # fmt: skip
    return tuple(calls)


def _generative_response(body: bytes) -> tuple[tuple[EmittedCall, ...], str | None, bool]:
    """A Generative Language answer: its calls as Gemini CLI runs them (a stream with no finish reason, or a
    refusal word, still runs its calls), its answer as the wire's decoder reads an end-of-turn response."""
    calls = _calls_as_run(_chunks_as_read(body))
    _, answer, decoded = _decoded(google_generative.decode_stream, _generated_body)(body)
    return calls, None if calls else answer, decoded or bool(calls)


def _decoded(
    decode: Callable[..., Iterator[Any]], whole: Callable[[dict[str, Any]], tuple[tuple[EmittedCall, ...], str | None]]
) -> Callable[[bytes], tuple[tuple[EmittedCall, ...], str | None, bool]]:
    """A wire's response decoder: an SSE stream through the wire's own ``decode_stream``, or a whole
    JSON answer."""

    def response(body: bytes) -> tuple[tuple[EmittedCall, ...], str | None, bool]:
        if body.lstrip()[:1] == b"{":
            value = decode_payload(body)
            return (*whole(value), True) if value is not None else ((), None, False)
        for event in decode(frame_sse((body,)), ""):
            if isinstance(event, Outcome):
                calls, answer = _outcome_calls(event)
                return calls, answer, True
        return (), None, False

    return response


WITNESS_WIRES: Mapping[str, WitnessWire] = MappingProxyType(
    {
        anthropic_messages.WIRE: WitnessWire(_messages_results, _decoded(anthropic_messages.decode_stream, _message_body)),
        openai_responses.WIRE: WitnessWire(_responses_results, _decoded(openai_responses.decode_stream, _response_body)),
        google_generative.WIRE: WitnessWire(_generative_results, _generative_response),
    }
)
"""The witness's decoders by wire; a new wire adds its entry here and its path in ``WITNESS_PATHS``."""

WITNESS_PATHS: tuple[tuple[str, str], ...] = (
    (anthropic_messages.ENDPOINT_PATH, anthropic_messages.WIRE),
    ("/responses", openai_responses.WIRE),
    (google_generative.STREAM_METHOD, google_generative.WIRE),
    (":generateContent", google_generative.WIRE),
)
"""(path suffix, wire): how a route request's path (its query left off) names its wire."""


def wire_of_path(path: str) -> str | None:
    """The wire a route request's path speaks (its query left off), or ``None``."""
    bare = path.partition("?")[0].rstrip("/")
    return next((wire for suffix, wire in WITNESS_PATHS if bare.endswith(suffix)), None)


def inflate(body: bytes, encoding: str | None) -> bytes | None:
    """A response body undone from its ``Content-Encoding`` (gzip, deflate, identity), at most
    ``MAX_DECODED_BODY`` bytes; ``None`` for an encoding the witness cannot read."""
    coding = (encoding or "identity").strip().lower()
    if coding in ("", "identity"):
        return body
    if coding not in ("gzip", "x-gzip", "deflate"):
        return None
    try:
        inflater = zlib.decompressobj(wbits=47 if coding != "deflate" else 15)
        return inflater.decompress(body, MAX_DECODED_BODY)
    except zlib.error:
        return None


def _unchunked(body: bytes) -> bytes | None:
    """A ``Transfer-Encoding: chunked`` body joined, trailers dropped; ``None`` when it is malformed."""
    parts: list[bytes] = []
    at = 0
    while True:
        end = body.find(b"\r\n", at)
        if end < 0:
            return None
        try:
            size = int(body[at:end].split(b";")[0].strip() or b"x", 16)
        except ValueError:
            return None
        if size == 0:
            return b"".join(parts)
        parts.append(body[end + 2 : end + 2 + size])
        at = end + 2 + size + 2


def http_response_body(raw: bytes) -> tuple[bytes | None, str | None]:
    """A relayed HTTP/1.1 response's body (de-chunked) and its ``Content-Encoding``; ``None`` for a body
    the witness cannot read."""
    head, separator, body = raw.partition(b"\r\n\r\n")
    if not separator:
        return None, None
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if colon:
            fields[name.strip().lower()] = value.strip().decode("latin-1")
    encoding = fields.get(b"content-encoding")
    if "chunked" in fields.get(b"transfer-encoding", "").lower():
        return _unchunked(body), encoding
    return body, encoding


def response_complete(raw: bytes) -> bool:
    """Whether a relayed HTTP/1.1 response is whole by its own framing (its ``Content-Length`` reached,
    or a chunked body's last chunk seen), so a peer that keeps the connection open is not waited for."""
    head, separator, body = raw.partition(b"\r\n\r\n")
    if not separator:
        return False
    fields = {name.strip().lower(): value.strip() for name, _, value in (line.partition(b":") for line in head.split(b"\r\n")[1:])}
    if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
        return body.endswith(b"0\r\n\r\n")
    length = fields.get(b"content-length")
    return length is not None and length.isdigit() and len(body) >= int(length)


def read_exchange(path: str, body: bytes, response: bytes | None) -> Exchange | None:
    """One exchange on ``path``: the request ``body`` and the decoded ``response`` body (``None``: not
    readable); ``None`` when the path is no wire the witness reads. Either body nested too deep to decode
    (a tool's output the harness sent on, a model's answer) is an unreadable exchange (``ROUTE_UNREAD``)."""
    wire = wire_of_path(path)
    if wire is None:
        return None
    decoders = WITNESS_WIRES[wire]
    try:
        results = decoders.results(body)
        if response is None:
            return Exchange((), results, None, decoded=False)
        calls, answer, decoded = decoders.response(response)
    except RecursionError:  # JSON nested past the decoder's reach: an exchange read by nobody, said so
        return Exchange((), (), None, decoded=False)
    return Exchange(calls, results, answer, decoded)


class RouteAccount(msgspec.Struct, frozen=True):
    """The route's account: exchanges seen and unreadable, the distinct calls emitted under each call id
    (in order; a provider numbering calls per response reuses an id), the distinct results sent per
    call id in the order they first appeared, and the end-of-turn answers."""

    exchanges: int = 0
    unreadable: int = 0
    emitted: Map[str, tuple[EmittedCall, ...]] = Map()
    results: Map[str, tuple[SentResult, ...]] = Map()
    answers: Map[str, bool] = Map()
    last_answered: bool | None = None
    """Whether the latest exchange ended the model's turn with an answer (``False``: with calls;
    ``None``: none yet, or unreadable)."""
    unsettled: bool = False
    """Read while a request was still being relayed: an answer may be missing, so the checks that need
    every answer (a result for a call never emitted, the terminal record's turns and answer) are not made."""

    def calls(self) -> Iterator[EmittedCall]:
        """Every distinct emission, by call id in order of first emission."""
        for emissions in self.emitted.values():
            yield from emissions


def _kept(values: Map[str, tuple[Any, ...]], key: str, value: Any) -> Map[str, tuple[Any, ...]]:
    kept = values.get(key, ())
    return values if value in kept or len(kept) >= MAX_RESULTS_PER_CALL else values.set(key, (*kept, value))


def witness(account: RouteAccount, exchange: Exchange) -> RouteAccount:
    """``account`` with ``exchange`` folded in."""
    emitted, results = account.emitted, account.results
    for call in exchange.calls:
        if call.numbered:  # two id-less calls alike in two responses are two emissions
            call = EmittedCall(f"{call.call_id}@{account.exchanges + 1}", call.name, call.input)
        emitted = _kept(emitted, call.call_id, call)
    for result in exchange.results:
        results = _kept(results, result.call_id, result)
    answers = account.answers if exchange.answer is None else account.answers.set(exchange.answer.strip(), True)
    last = (exchange.answer is not None) if exchange.decoded else None
    return RouteAccount(account.exchanges + 1, account.unreadable + (not exchange.decoded), emitted, results, answers,
                        last, account.unsettled)  # fmt: skip


class Presentation(msgspec.Struct, frozen=True, gc=False):
    """A presentation: the tool name and input a ``tool.requested`` carried. Untracked by the cyclic
    collector: ``input`` is a decoded JSON value, which holds no struct (docs/DEVELOPING.md#untracked-state)."""

    name: str
    input: Any


class _Unhashable(msgspec.Struct, frozen=True):
    """A value of no hashable shape, kept as itself: equal as ``==`` says, every one hashed alike."""

    value: Any

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unhashable) and bool(self.value == other.value)

    def __hash__(self) -> int:
        return 0


def _frozen(value: Any) -> Any:
    """A decoded JSON value as a hashable one, equal exactly when the values are (``==``): an object a tagged
    frozenset of its pairs, a list (or tuple) a tagged tuple, so neither meets the other; ``1``, ``1.0`` and
    ``true`` stay equal and hash alike."""
    if isinstance(value, dict):
        return ("object", frozenset((key, _frozen(item)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_frozen(item) for item in value))
    try:
        hash(value)
    except TypeError:
        return _Unhashable(value)
    return value


def presentation_key(presented: Presentation | None) -> Any:
    """What a presentation is looked up by: equal keys exactly for equal presentations (``None``: a deny
    with no presentation before it)."""
    return None if presented is None else (presented.name, _frozen(presented.input))


class Presentations(msgspec.Struct, frozen=True, gc=False):
    """One call id's distinct presentations in the order first seen, as persistent maps, so an id
    presented again with yet another input costs the same however many it had (docs/decisions.md#the-route-witness).
    Untracked by the cyclic collector: it holds persistent maps built before it, never itself."""

    order: Map[int, Presentation] = Map()
    keys: Map[Any, bool] = Map()

    def __len__(self) -> int:
        return len(self.order)

    def __iter__(self) -> Iterator[Presentation]:
        return (self.order[index] for index in range(len(self.order)))

    def __contains__(self, presented: object) -> bool:
        return isinstance(presented, Presentation) and presentation_key(presented) in self.keys

    def latest(self) -> Presentation | None:
        """The presentation first seen last."""
        return self.order[len(self.order) - 1] if self.order else None

    def added(self, presented: Presentation) -> Presentations:
        key = presentation_key(presented)
        if key in self.keys:
            return self
        return Presentations(self.order.set(len(self.order), presented), self.keys.set(key, True))


_MIXED = object()
"""A call id's denials answered more than one presentation."""


class Denials(msgspec.Struct, frozen=True, gc=False):
    """One call id's denials in order, each with the presentation it answered and its reason, and the one
    presentation every denial answered (``_MIXED`` once they differ), so a deny more costs the same however
    many came before. Untracked by the cyclic collector, as :class:`Presentations`."""

    order: Map[int, tuple[Presentation | None, str]] = Map()
    alike: Any = None

    def __len__(self) -> int:
        return len(self.order)

    def __iter__(self) -> Iterator[tuple[Presentation | None, str]]:
        return (self.order[index] for index in range(len(self.order)))

    def all_answered(self, presented: Presentation) -> bool:
        """Whether every denial answered ``presented`` (none: no)."""
        return bool(self.order) and self.alike is not _MIXED and self.alike == presentation_key(presented)

    def added(self, presented: Presentation | None, reason: str) -> Denials:
        key = presentation_key(presented)
        alike = key if not self.order else (self.alike if self.alike is not _MIXED and self.alike == key else _MIXED)
        return Denials(self.order.set(len(self.order), (presented, reason)), alike)


_NO_PRESENTATIONS = Presentations()


class StreamAccount(msgspec.Struct, frozen=True):
    """What the stream said so far: each call id's distinct presentations, the ids decided, and each
    denial with the presentation it answered (the id's latest) and its reason; the ids already named
    bypassed."""

    requested: Map[str, Presentations] = Map()
    decided: Map[str, bool] = Map()
    denied: Map[str, Denials] = Map()
    bypassed: Map[str, bool] = Map()


def observe_event(stream: StreamAccount, payload: Event) -> StreamAccount:
    """``stream`` with one written event's payload noted."""
    if isinstance(payload, ToolRequested):
        seen = stream.requested.get(payload.call_id, _NO_PRESENTATIONS)
        now = seen.added(Presentation(payload.name, payload.input))
        return stream if now is seen else msgspec.structs.replace(stream, requested=stream.requested.set(payload.call_id, now))
    if isinstance(payload, ToolDecided):
        denied = stream.denied
        if isinstance(payload.decision, Deny):
            last = stream.requested.get(payload.call_id, _NO_PRESENTATIONS).latest()
            denied = denied.set(payload.call_id, denied.get(payload.call_id, Denials()).added(last, payload.decision.reason))
        return msgspec.structs.replace(stream, decided=stream.decided.set(payload.call_id, True), denied=denied)
    return stream


def _same_input(facts: WitnessFacts, call: EmittedCall, presented: Presentation) -> bool:
    """Whether a presentation is the emitted call: its name or the kind's recorded name for it, and the
    same input or, where the kind lists fields for the name, those fields agreeing
    (docs/decisions.md#the-route-witness)."""
    name, value = presented.name, presented.input
    if name != call.name and facts.names.get(call.name) != name:
        return False
    pairs = facts.fields.get(call.name)
    if pairs is None or value == call.input:
        return bool(value == call.input)
    source = call.input if isinstance(call.input, dict) else {}
    target = value if isinstance(value, dict) else {}
    return all((call.input if emitted == "" else source.get(emitted)) == target.get(kept) for emitted, kept in pairs)


def is_denial(result: SentResult, reason: str) -> bool:
    """A result is the vendor's denial when it carries metaharness's reason (as written, or escaped
    inside a JSON string) and, on a wire with ``is_error``, is an error."""
    if result.is_error is False:
        return False
    return reason in result.text or compact(reason)[1:-1].decode() in result.text


def _warning(code: str, message: str) -> WarningRaised:
    return WarningRaised(code=code, message=message)


def _call_findings(
    account: RouteAccount, stream: StreamAccount, facts: WitnessFacts, deciding: bool
) -> tuple[list[WarningRaised], int, int]:
    """Per emission, COVERAGE_GAP when its id has no presentation or no decision (a tool the kind runs
    unasked needs only the presentation), when the run decides (frame or ask); per call id,
    DECISION_LAUNDERED when a presentation is none of the id's emissions. The decided and reconciled
    (decided on an emitted input) counts."""
    warnings: list[WarningRaised] = []
    decided = reconciled = 0
    for call_id, emissions in account.emitted.items():
        presented = stream.requested.get(call_id, _NO_PRESENTATIONS)
        for call in emissions:
            if call.name in facts.hosts:
                continue
            matched = any(_same_input(facts, call, one) for one in presented)
            covered = bool(presented) and (call_id in stream.decided or call.name in facts.unasked)
            decided += covered
            reconciled += covered and matched
            if not covered and deciding:
                warnings.append(_warning("COVERAGE_GAP", (
                    f"the model emitted call {call_id} ({call.name}) and the stream has no tool.requested and "
                    "tool.decided for it: it ran undecided, or was hidden")))  # fmt: skip
        hosted = all(call.name in facts.hosts for call in emissions)
        if not hosted and not all(any(_same_input(facts, call, one) for call in emissions) for one in presented):
            warnings.append(_warning("DECISION_LAUNDERED", (
                f"call {call_id} was requested with an input other than the one the model emitted on the "
                "route: the decision was made on other input than what ran")))  # fmt: skip
    return warnings, decided, reconciled


def _bypassed(account: RouteAccount, facts: WitnessFacts, call_id: str, denials: Denials) -> bool:
    """A denial is bypassed when the result first sent for the emission it answered (the k-th distinct
    result for the k-th emission of the id) is not the denial; a later rewrite of that result (a
    harness clearing old results from its history) does not count."""
    emissions, results = account.emitted.get(call_id, ()), account.results.get(call_id, ())
    for presented, reason in denials:
        index = next((i for i, call in enumerate(emissions) if presented and _same_input(facts, call, presented)), 0)
        if index < len(results) and not is_denial(results[index], reason):
            return True
    return False


def _result_findings(account: RouteAccount, stream: StreamAccount, facts: WitnessFacts) -> list[WarningRaised]:
    """DECISION_BYPASSED for a denied call whose sent result is not the denial; RECORD_FORGED for a
    result sent for a call the model never emitted."""
    warnings: list[WarningRaised] = []
    for call_id in account.results:
        denials = stream.denied.get(call_id)
        if call_id not in account.emitted and not account.unsettled:
            warnings.append(_warning("RECORD_FORGED", (
                f"the harness sent the model a result for call {call_id}, which the model never emitted on the route")))  # fmt: skip
        elif denials and call_id not in stream.bypassed and _bypassed(account, facts, call_id, denials):
            warnings.append(_warning("DECISION_BYPASSED", (
                f"metaharness denied call {call_id}, yet the result the harness sent the model is not the denial: "
                "the decision was bypassed")))  # fmt: skip
    return warnings


def _record_findings(account: RouteAccount, ended: SessionEnded) -> list[WarningRaised]:
    """RECORD_FORGED for a terminal record that disagrees with the route on turns or the last answer."""
    warnings: list[WarningRaised] = []
    if account.unsettled:
        return warnings
    if ended.num_turns is not None and ended.num_turns > account.exchanges:
        warnings.append(_warning("RECORD_FORGED", (
            f"the terminal record counts {ended.num_turns} turns and the model route carried {account.exchanges} "
            "requests")))  # fmt: skip
    answer = ended.final_answer.text.strip() if ended.final_answer is not None else ""
    if answer and answer not in account.answers and not account.unreadable:
        warnings.append(_warning("RECORD_FORGED", (
            "the terminal record's final answer is no answer the model gave on the route")))  # fmt: skip
    return warnings


def by_presentation(account: RouteAccount, stream: StreamAccount, facts: WitnessFacts) -> RouteAccount:
    """The account with each emission filed under the stream's call id presented with its name and input
    (docs/decisions.md#the-route-witness), for a kind whose seam carries no call id: its own id when the
    stream presents it so, else the first such id not yet taken; an emission no presentation matches keeps its
    own id, and the results sent under an emission's own id follow it."""
    free = [(call_id, presented) for call_id, seen in stream.requested.items() for presented in seen]
    emitted: Map[str, tuple[EmittedCall, ...]] = Map()
    moved: dict[str, str] = {}
    for key, emissions in account.emitted.items():
        for call in emissions:
            spot = next((i for i, (call_id, one) in enumerate(free) if call_id == key and _same_input(facts, call, one)),
                        next((i for i, (_, one) in enumerate(free) if _same_input(facts, call, one)), None))
            target = key if spot is None else free.pop(spot)[0]
            moved.setdefault(key, target)
            emitted = _kept(emitted, target, call)
    results: Map[str, tuple[SentResult, ...]] = Map()
    for key, sent in account.results.items():
        for result in sent:
            results = _kept(results, moved.get(key, key), result)
    return msgspec.structs.replace(account, emitted=emitted, results=results)


def reconcile(
    account: RouteAccount, stream: StreamAccount, ended: SessionEnded, facts: WitnessFacts, deciding: bool = True
) -> tuple[tuple[WarningRaised, ...], RouteCalls]:
    """The witness's warnings at the terminal record, in order (calls, results, the record), and the
    counts for ``session.ended.route.calls`` (docs/decisions.md#the-route-witness); ``deciding``: the
    run's decision mode is frame or ask."""
    if facts.by_presentation:
        account = by_presentation(account, stream, facts)
    calls, decided, reconciled = _call_findings(account, stream, facts, deciding)
    emitted = sum(1 for call in account.calls() if call.name not in facts.hosts)
    warnings = (*calls, *_result_findings(account, stream, facts), *_record_findings(account, ended), *_unread(account))
    return warnings, RouteCalls(emitted=emitted, decided=decided, reconciled=reconciled)


def _unread(account: RouteAccount) -> tuple[WarningRaised, ...]:
    """ROUTE_UNREAD when the witness could not read a response: the calls in it were checked by nobody."""
    if not account.unreadable:
        return ()
    return (_warning("ROUTE_UNREAD", (
        f"the route witness could not read {account.unreadable} of the {account.exchanges} model responses (not the "
        "wire's stream, over 16 MiB, or cut short): no call in them was checked against the stream")),)  # fmt: skip


def unanswered_completion(account: RouteAccount, reason: str) -> WarningRaised | None:
    """RECORD_FORGED when the stream closes ``completed`` while the model's last word on the route was a
    tool call that got no answer: the record says the run finished, the route says the model had not."""
    if reason != "completed" or account.unsettled or account.last_answered is not False:
        return None
    return _warning("RECORD_FORGED", (
        "the record says the run completed, yet the model's last answer on the route was a tool call that was never "
        "answered: the terminal record disagrees with the route"))  # fmt: skip


def bypassed_count(warnings: tuple[WarningRaised, ...]) -> int:
    """How many of the witness's warnings are ``DECISION_BYPASSED``."""
    return sum(1 for warning in warnings if warning.code == "DECISION_BYPASSED")
