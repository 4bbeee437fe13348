"""``mcp-serve``'s MCP wire as pure steps (docs/hermetic.md#calling-a-catalogue-entry, #mcp-serve).

``read_line`` takes one stdin line to what the server does with it: an ``ResponseLine`` (one response
line), a ``Note`` for stderr (a line that is not JSON), ``Quiet`` (a notification), or ``Perform``
(a call that passed every check and now needs the loop's tool, docs/loop.md#tools). ``performed_answer``
turns what the tool did into the ``tools/call`` response. Nothing here reads or writes.
"""

from __future__ import annotations

from typing import Any

import msgspec

from metaharness.pure.bounds import decode_bounded
from metaharness.pure.catalogue import (
    WRITE_ENTRIES,
    Catalogue,
    CatalogueEntry,
    input_schema,
    operation_of,
)
from metaharness.pure.jsonline import compact
from metaharness.pure.loop.catalogue import BY_NAME, Publication, schema_of

DEFAULT_PROTOCOL_VERSION = "2025-06-18"
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

EFFECTS = ("read", "write", "run")
_EFFECT_OF_RISK = {"low": "read", "medium": "write", "high": "run"}


class CatalogueSurface(msgspec.Struct, frozen=True):
    """A server handed a catalogue (docs/hermetic.md#serving-a-catalogue); ``writable`` is ``--writable``."""

    catalogue: Catalogue
    writable: bool


class OwnedSurface(msgspec.Struct, frozen=True):
    """The owned surface's three verbs over the loop's published entries (docs/hermetic.md#owned-surface)."""

    publication: Publication


class Server(msgspec.Struct, frozen=True):
    """What the server serves and the package version it names in ``serverInfo``."""

    surface: CatalogueSurface | OwnedSurface
    version: str


class ResponseLine(msgspec.Struct, frozen=True):
    """One response: a compact JSON object and ``\\n``, written to stdout and flushed."""

    line: bytes


class Note(msgspec.Struct, frozen=True):
    """A skipped line's note for stderr."""

    text: str


class Quiet(msgspec.Struct, frozen=True):
    """A notification: accepted, never answered."""


class Perform(msgspec.Struct, frozen=True):
    """Perform loop entry ``entry`` with ``arguments`` in the server's workspace, then answer
    ``request_id`` with ``performed_answer``."""

    request_id: Any
    entry: str
    arguments: dict[str, Any]


Step = ResponseLine | Note | Quiet | Perform


def _response(request_id: Any, result: Any) -> ResponseLine:
    return ResponseLine(compact({"jsonrpc": "2.0", "id": request_id, "result": result}) + b"\n")


def error_answer(request_id: Any, code: int, message: str) -> ResponseLine:
    """A JSON-RPC error response, ``{"code", "message"}`` (docs/hermetic.md#mcp-wire)."""
    return ResponseLine(compact({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}) + b"\n")


def tool_answer(request_id: Any, text: str, is_error: bool) -> ResponseLine:
    """A ``tools/call`` result: one text item and ``isError`` (docs/hermetic.md#mcp-wire)."""
    return _response(request_id, {"content": [{"type": "text", "text": text}], "isError": is_error})


def performed_answer(request_id: Any, outcome: bytes | str) -> ResponseLine:
    """What the performing entry did: its reply (bytes) as 2-space-indented JSON text with
    ``isError: false``, or its failure text with ``isError: true`` (docs/hermetic.md#calling-a-catalogue-entry)."""
    if isinstance(outcome, str):
        return tool_answer(request_id, outcome, True)
    return tool_answer(request_id, _indented(outcome), False)


def request_id_of(line: bytes) -> Any:
    """The ``id`` of a line, for an answer to a fault; ``None`` when it has none."""
    try:
        message = decode_bounded(line)
    except (msgspec.DecodeError, ValueError):
        return None
    return message.get("id") if isinstance(message, dict) else None


def read_line(server: Server, line: bytes) -> Step:
    """One stdin line to its step by docs/hermetic.md#mcp-wire."""
    try:
        message = decode_bounded(line)
    except (msgspec.DecodeError, ValueError) as error:
        return Note(f"skipped a line that is not JSON: {error}")
    if isinstance(message, list):
        return error_answer(None, INVALID_REQUEST, "a batch is not accepted; send one request per line")
    if not isinstance(message, dict):
        return error_answer(None, INVALID_REQUEST, "a message must be a JSON object")
    if "id" not in message:
        return Quiet()
    request_id = message["id"]
    if message.get("jsonrpc") != "2.0":
        return error_answer(request_id, INVALID_REQUEST, 'jsonrpc must be "2.0"')
    method = message.get("method")
    if not isinstance(method, str):
        return error_answer(request_id, INVALID_REQUEST, "a request needs a string method")
    params = message.get("params")
    if method == "initialize":
        return _response(request_id, _initialize(server, params))
    if method == "ping":
        return _response(request_id, {})
    if method == "tools/list":
        return _response(request_id, {"tools": _tools(server.surface)})
    if method == "tools/call":
        if not isinstance(params, dict):
            return error_answer(request_id, INVALID_PARAMS, "tools/call params must be an object")
        name = params.get("name")
        if not isinstance(name, str):
            return error_answer(request_id, INVALID_PARAMS, "tools/call params.name must be a string")
        arguments = params.get("arguments", {})
        if isinstance(server.surface, CatalogueSurface):
            return _catalogue_call(server.surface, request_id, name, arguments)
        return _owned_call(server.surface.publication, request_id, name, arguments)
    return error_answer(request_id, METHOD_NOT_FOUND, f"method not found: {method}")


def _initialize(server: Server, params: Any) -> dict[str, Any]:
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    return {
        "protocolVersion": asked if isinstance(asked, str) else DEFAULT_PROTOCOL_VERSION,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "metaharness", "version": server.version},
    }


def _tools(surface: CatalogueSurface | OwnedSurface) -> list[dict[str, Any]]:
    if isinstance(surface, CatalogueSurface):
        return [
            {"name": entry.name, "description": entry.description, "inputSchema": input_schema(entry)}
            for entry in surface.catalogue.entries
        ]
    return [
        {"name": name, "description": description, "inputSchema": schema}
        for name, (description, schema) in _VERBS.items()
    ]


def not_a_tool(name: str, names: tuple[str, ...]) -> str:
    """The answer to a name the run does not have (docs/hermetic.md#owned-surface)."""
    return f"`{name}` is not a tool this run has; it has: {', '.join(names)}"


def check_call_arguments(
    name: str, fields: tuple[tuple[str, bool], ...], arguments: Any
) -> tuple[dict[str, Any], None] | tuple[None, str]:
    """docs/hermetic.md#calling-a-catalogue-entry checks 1-3 against ``fields`` (name, required) in order: an object, no
    key outside the fields, every required field present and not null; then a non-required null is removed.
    Gives the arguments to perform, or the ``isError`` text naming the entry and the field."""
    if not isinstance(arguments, dict):
        return None, f"`{name}`: arguments must be an object"
    known = {field for field, _required in fields}
    unknown = next((key for key in arguments if key not in known), None)
    if unknown is not None:
        return None, f"`{name}` has no input field `{unknown}`"
    missing = next((field for field, required in fields if required and arguments.get(field) is None), None)
    if missing is not None:
        return None, f"`{name}` requires `{missing}`"
    return {key: value for key, value in arguments.items() if value is not None}, None


def _catalogue_call(surface: CatalogueSurface, request_id: Any, name: str, arguments: Any) -> Step:
    """docs/hermetic.md#calling-a-catalogue-entry on a catalogue entry, then the writable check; the rest is the
    loop entry's."""
    entry: CatalogueEntry | None = surface.catalogue.entry(name)
    if entry is None:
        return tool_answer(request_id, not_a_tool(name, surface.catalogue.names()), True)
    checked, problem = check_call_arguments(name, tuple((f.name, f.required) for f in entry.input), arguments)
    if checked is None:
        return tool_answer(request_id, problem or "", True)
    if operation_of(entry.performs) is None:
        return tool_answer(
            request_id,
            f"`{name}` performs `{entry.performs}`, which this build does not perform; nothing was done",
            True,
        )
    if entry.performs in WRITE_ENTRIES and not surface.writable:
        return tool_answer(
            request_id, f"`{name}` performs {entry.performs}, which needs a writable workspace; nothing was done", True
        )
    return Perform(request_id, entry.performs, checked)


# The owned surface (docs/hermetic.md#owned-surface)

_VERBS: dict[str, tuple[str, dict[str, Any]]] = {
    "tool_search": (
        (
            "Search this run's tools by a word of their name or description and by effect (read, write, run); "
            "answers the matching tools and those withheld from this run."
        ),
        {
            "type": "object",
            "properties": {"query": {"type": "string"}, "effect": {"type": "string", "enum": list(EFFECTS)}},
            "required": [],
            "additionalProperties": False,
        },
    ),
    "tool_describe": (
        "Describe one of this run's tools: its operation, description and input schema.",
        {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": False,
        },
    ),
    "tool_invoke": (
        "Perform one of this run's tools with its arguments.",
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        },
    ),
}
_VERB_FIELDS: dict[str, tuple[tuple[str, bool], ...]] = {
    verb: tuple((field, field in schema["required"]) for field in schema["properties"])
    for verb, (_description, schema) in _VERBS.items()
}


def owned_operation(name: str) -> str:
    """The operation of a loop entry on the owned surface: the catalogue's mapping (``find`` is a
    search, docs/hermetic.md#what-an-entry-performs), ``run`` a ``shell``."""
    return operation_of(name) or BY_NAME[name].operation


def _matches(name: str, description: str, effect: str, query: str | None, wanted: str | None) -> bool:
    if wanted is not None and effect != wanted:
        return False
    return query is None or query.casefold() in name.casefold() or query.casefold() in description.casefold()


def _search(publication: Publication, query: str | None, effect: str | None) -> dict[str, Any]:
    tools = [
        {"name": entry.name, "operation": owned_operation(entry.name), "description": entry.description}
        for entry in publication.published
        if _matches(entry.name, entry.description, _EFFECT_OF_RISK[entry.risk], query, effect)
    ]
    withheld = [
        {"tool": held.tool, "reason": held.reason}
        for held in publication.withheld
        if _matches(held.tool, BY_NAME[held.tool].description, _EFFECT_OF_RISK[BY_NAME[held.tool].risk], query, effect)
    ]
    return {"tools": tools, "withheld": withheld}


def _owned_call(publication: Publication, request_id: Any, verb: str, arguments: Any) -> Step:
    if verb not in _VERBS:
        return tool_answer(request_id, not_a_tool(verb, tuple(_VERBS)), True)
    checked, problem = check_call_arguments(verb, _VERB_FIELDS[verb], arguments)
    if checked is None:
        return tool_answer(request_id, problem or "", True)
    wrong = next(
        (field for field, value in checked.items() if not isinstance(value, dict if field == "arguments" else str)),
        None,
    )
    if wrong is not None:
        kind = "an object" if wrong == "arguments" else "a string"
        return tool_answer(request_id, f"`{verb}`: `{wrong}` must be {kind}", True)
    if verb == "tool_search":
        effect = checked.get("effect")
        if effect is not None and effect not in EFFECTS:
            return tool_answer(request_id, f"`tool_search`: `effect` must be one of {', '.join(EFFECTS)}", True)
        return tool_answer(request_id, _indented(compact(_search(publication, checked.get("query"), effect))), False)
    name = checked["name"]
    if name not in publication.names():
        return tool_answer(request_id, not_a_tool(name, publication.names()), True)
    if verb == "tool_describe":
        entry = BY_NAME[name]
        described = {
            "name": name,
            "operation": owned_operation(name),
            "description": entry.description,
            "input_schema": schema_of(name, publication.programs),
        }
        return tool_answer(request_id, _indented(compact(described)), False)
    return Perform(request_id, name, checked["arguments"])


def _indented(data: bytes) -> str:
    """JSON bytes as 2-space-indented text, keys in the order given."""
    return msgspec.json.format(data, indent=2).decode("utf-8")
