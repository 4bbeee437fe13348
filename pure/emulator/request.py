"""What the emulator reads from a request body (docs/loop.md#answer-function, #record-file, #vendor-cli-scenarios).

``read_request`` never fails: any JSON value is read as far as it has the shapes of either wire, so
long vendor prompts, unknown tool types, unknown items or blocks and extra keys are all accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import msgspec

RESPONSES_WIRE = "openai-responses"
MESSAGES_WIRE = "anthropic-messages"
GENERATIVE_WIRE = "google-generative"
GENERATIVE_METHODS = (":streamGenerateContent", ":generateContent", ":countTokens")
"""The Generative Language methods a ``/v1beta/models/{model}:{method}`` path names."""

_WORKING_DIRECTORY = re.compile(r"working directory: (/[^\r\n]*)", re.IGNORECASE)
"""docs/loop.md#vendor-cli-scenarios's ``Working directory: <absolute path>`` line; Claude Code 2.1.332 writes it as
`` - Primary working directory: <path>``, so the phrase is matched in any case, anywhere in a line."""
_NESTED_TOOL = re.compile(r"declare const tools: \{\s*(\w+)\(")
"""A nested tool a code-mode host declares in its description (Codex 0.171.0's ``exec``)."""
_REASONING_ITEMS = frozenset({"reasoning"})
_REASONING_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_RESULT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})


class OfferedTool(msgspec.Struct, frozen=True):
    """One tool definition of the request: its name (the ``type`` when unnamed), the definition's
    ``type`` (``None`` on Messages client tools), its schema (``parameters``/``input_schema``), for a
    code-mode host (Codex's ``exec``) the nested tools its description declares, and the Responses
    namespace it was offered in (Codex's ``collaboration``, never ``functions``, the default one)."""

    name: str
    kind: str | None
    schema: Any
    nested: tuple[str, ...] = ()
    namespace: str | None = None


class RequestView(msgspec.Struct, frozen=True, kw_only=True):
    """The facts of one request body the answer and the record use."""

    wire: str | None
    model: str | None
    stream: bool | None
    tools: tuple[OfferedTool, ...]
    tool_results: int
    replayed_reasoning: int
    instruction_text: str | None
    system_cache_control: Any
    first_user_text: str | None
    task_steps: tuple[str, ...] = ()
    working_directory: str | None
    item_kinds: tuple[str, ...]
    output_bound: int | None
    store: Any
    include: Any


def wire_of(path: str) -> str | None:
    """The wire a route speaks (docs/loop.md#process-and-routes): ``…/responses`` or ``…/messages``, else none."""
    if path.endswith("/responses"):
        return RESPONSES_WIRE
    if path.endswith("/messages"):
        return MESSAGES_WIRE
    if path.startswith("/v1beta/models/") and path.endswith(GENERATIVE_METHODS):
        return GENERATIVE_WIRE
    return None


def path_model(path: str) -> str | None:
    """The model a Generative Language path names (``/v1beta/models/{model}:{method}``), else ``None``."""
    if wire_of(path) != GENERATIVE_WIRE:
        return None
    model = path.removeprefix("/v1beta/models/").rpartition(":")[0]
    return model or None


def read_request(wire: str | None, body: Any) -> RequestView:
    """Read ``body`` (a decoded JSON value) as a request on ``wire``."""
    fields = body if isinstance(body, dict) else {}
    model = fields.get("model")
    stream = fields.get("stream")
    if wire == MESSAGES_WIRE:
        view = _read_messages(fields)
        bound = fields.get("max_tokens")
    elif wire == GENERATIVE_WIRE:
        view = _read_generative(fields)
        config = fields.get("generationConfig")
        bound = config.get("maxOutputTokens") if isinstance(config, dict) else None
    else:
        view = _read_responses(fields)
        bound = fields.get("max_output_tokens")
    return RequestView(
        wire=wire,
        model=model if isinstance(model, str) and model else None,
        stream=stream if isinstance(stream, bool) else None,
        tools=tuple(_offered_tools(fields)),
        output_bound=bound if isinstance(bound, int) and not isinstance(bound, bool) else None,
        store=fields.get("store"),
        include=fields.get("include"),
        **view,
    )


def _definitions(tools: Any, namespace: str | None = None) -> Iterator[tuple[dict[str, Any], str | None]]:
    """Tool definitions, each with the ``namespace`` it was offered in: a namespace definition's
    members in its place."""
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict) and tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
            name = tool.get("name")
            yield from _definitions(tool["tools"], name if isinstance(name, str) else None)
        elif isinstance(tool, dict):
            yield tool, namespace


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _declarations(fields: dict[str, Any]) -> Iterator[OfferedTool]:
    """The Generative Language ``tools[].functionDeclarations`` (schema ``parametersJsonSchema`` or ``parameters``)."""
    for tool in _listed(fields.get("tools")):
        for declared in _listed(tool.get("functionDeclarations")) if isinstance(tool, dict) else ():
            if isinstance(declared, dict) and isinstance(declared.get("name"), str):
                schema = declared.get("parametersJsonSchema", declared.get("parameters"))
                yield OfferedTool(name=declared["name"], kind=None, schema=schema)


def _offered_tools(fields: dict[str, Any]) -> Iterator[OfferedTool]:
    """The body's ``tools`` and, on Responses, those of ``additional_tools`` input items (Codex); on the
    Generative Language wire, its function declarations."""
    if "contents" in fields:
        yield from _declarations(fields)
        return
    added = [tool for item in _listed(fields.get("input"))
             if isinstance(item, dict) and item.get("type") == "additional_tools"
             for tool in _listed(item.get("tools"))]
    for tool, namespace in _definitions([*_listed(fields.get("tools")), *added]):
        kind = tool.get("type") if isinstance(tool.get("type"), str) else None
        name = tool.get("name") if isinstance(tool.get("name"), str) else kind
        if name is None:
            continue
        description = tool.get("description")
        nested = tuple(_NESTED_TOOL.findall(description)) if kind == "custom" and isinstance(description, str) else ()
        yield OfferedTool(name=name, kind=kind, schema=tool.get("parameters", tool.get("input_schema")),
                          nested=nested, namespace=namespace)


def _blocks(content: Any) -> list[dict[str, Any]]:
    """Content as blocks: a string is one text block, a list keeps its object members."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _texts(blocks: list[dict[str, Any]]) -> list[str]:
    return [block["text"] for block in blocks if isinstance(block.get("text"), str)]


def _working_directory(texts: list[str]) -> str | None:
    for text in texts:
        found = _WORKING_DIRECTORY.search(text)
        if found:
            return found.group(1).rstrip()
    return None


def _read_messages(fields: dict[str, Any]) -> dict[str, Any]:
    system = _blocks(fields.get("system"))
    messages = [m for m in fields.get("messages", []) if isinstance(m, dict)] if isinstance(
        fields.get("messages"), list) else []
    kinds: list[str] = []
    message_texts: list[str] = []
    user_texts: list[str] = []
    first_user: str | None = None
    results = reasoning = 0
    for message in messages:
        role = message.get("role") if isinstance(message.get("role"), str) else "unknown"
        blocks = _blocks(message.get("content"))
        for block in blocks:
            kind = block.get("type") if isinstance(block.get("type"), str) else "unknown"
            kinds.append(f"{role}:{kind}")
            results += kind == "tool_result"
            reasoning += kind in _REASONING_BLOCKS
        texts = _texts([b for b in blocks if b.get("type") == "text"])
        message_texts.extend(texts)
        user_texts.extend(texts if role == "user" else [])
        if role == "user" and first_user is None and texts:
            first_user = texts[0]
    system_texts = _texts(system)
    cache_control = system[-1].get("cache_control") if system else None
    return {
        "tool_results": results,
        "replayed_reasoning": reasoning,
        "instruction_text": "\n".join(system_texts) if system_texts else None,
        "system_cache_control": cache_control,
        "first_user_text": first_user,
        "task_steps": _task_steps(user_texts),
        "working_directory": _working_directory(system_texts + message_texts),
        "item_kinds": tuple(kinds),
    }


def _task_steps(texts: list[str]) -> tuple[str, ...]:
    """Each line of the conversation's texts that begins ``$ ``, without it, in order."""
    return tuple(line[2:] for text in texts for line in text.splitlines() if line.startswith("$ "))


def _part_kind(part: dict[str, Any]) -> str:
    """A Generative Language part's kind: its one data key (``text``, ``functionCall``, ``functionResponse``, …)."""
    return next((key for key in part if key not in ("thought", "thoughtSignature")), "unknown")


def _read_generative(fields: dict[str, Any]) -> dict[str, Any]:
    system = fields.get("systemInstruction")
    system_parts = _listed(system.get("parts")) if isinstance(system, dict) else []
    system_texts = [p["text"] for p in system_parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    kinds: list[str] = []
    texts: list[str] = []
    user_texts: list[str] = []
    first_user: str | None = None
    results = reasoning = 0
    for content in (c for c in _listed(fields.get("contents")) if isinstance(c, dict)):
        role = content.get("role") if isinstance(content.get("role"), str) else "unknown"
        for part in (p for p in _listed(content.get("parts")) if isinstance(p, dict)):
            kind = _part_kind(part)
            kinds.append(f"{role}:{kind}")
            results += kind == "functionResponse"
            reasoning += part.get("thought") is True
            if kind == "text" and isinstance(part["text"], str):
                texts.append(part["text"])
                user_texts.extend([part["text"]] if role == "user" else [])
                first_user = part["text"] if first_user is None and role == "user" else first_user
    return {
        "tool_results": results,
        "replayed_reasoning": reasoning,
        "instruction_text": "\n".join(system_texts) if system_texts else None,
        "system_cache_control": None,
        "first_user_text": first_user,
        "task_steps": _task_steps(user_texts),
        "working_directory": _working_directory(system_texts + texts),
        "item_kinds": tuple(kinds),
    }


def _item_texts(item: dict[str, Any]) -> list[str]:
    return _texts(_blocks(item.get("content")))


def _read_responses(fields: dict[str, Any]) -> dict[str, Any]:
    raw = fields.get("input")
    items = [{"type": "message", "role": "user", "content": raw}] if isinstance(raw, str) else (
        [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else [])
    instructions = [fields["instructions"]] if isinstance(fields.get("instructions"), str) else []
    kinds: list[str] = []
    texts: list[str] = []
    user_texts: list[str] = []
    first_user: str | None = None
    results = reasoning = 0
    for item in items:
        kind = item.get("type") if isinstance(item.get("type"), str) else (
            "message" if "role" in item else "unknown")
        role = item.get("role") if isinstance(item.get("role"), str) else None
        kinds.append(f"{kind}:{role}" if kind == "message" and role else str(kind))
        results += kind in _RESULT_ITEMS
        reasoning += kind in _REASONING_ITEMS
        if kind != "message":
            continue
        item_texts = _item_texts(item)
        texts.extend(item_texts)
        if role in ("developer", "system"):
            instructions.extend(item_texts)
        elif role == "user":
            user_texts.extend(item_texts)
            first_user = item_texts[0] if first_user is None and item_texts else first_user
    return {
        "tool_results": results,
        "replayed_reasoning": reasoning,
        "instruction_text": "\n".join(instructions) if instructions else None,
        "system_cache_control": None,
        "first_user_text": first_user,
        "task_steps": _task_steps(user_texts),
        "working_directory": _working_directory(instructions + texts),
        "item_kinds": tuple(kinds),
    }
