"""The emulator's record line (docs/loop.md#record-file): request facts, never a credential value, a cookie or
any header value but the named non-secret ones."""

from __future__ import annotations

from typing import Any

from metaharness.pure.emulator.answer import Exchange, Headers, header
from metaharness.pure.jsonline import compact, sha256_hex


def _credential(headers: Headers) -> tuple[str | None, int | None]:
    """Which credential header came and how many bytes its value holds (after ``Bearer ``)."""
    authorization = header(headers, "authorization")
    if authorization is not None:
        scheme, _, token = authorization.partition(" ")
        value = token if scheme.lower() == "bearer" else authorization
        return "authorization", len(value.encode())
    for name in ("x-api-key", "x-goog-api-key"):
        api_key = header(headers, name)
        if api_key is not None:
            return name, len(api_key.encode())
    return None, None


def record_line(*, seq: int, scenario: str, method: str, path: str, query: str | None, headers: Headers,
                raw: bytes, exchange: Exchange, with_body: bool) -> bytes:
    """One compact JSON line, every key present (``null`` when not applicable), ``\\n`` ended."""
    admitted = exchange.admitted
    view = admitted.view if admitted is not None else None
    body = admitted.body if admitted is not None else raw
    credential_header, credential_length = _credential(headers)
    line: dict[str, Any] = {
        "seq": seq,
        "scenario": scenario,
        "method": method,
        "path": path,
        "query": query,
        "wire": view.wire if view is not None else None,
        "side": exchange.side,
        "stream": view.stream if view is not None else None,
        "model": view.model if view is not None else None,
        "header_names": [name.lower() for name, _ in headers],
        "accept": header(headers, "accept"),
        "content_type": header(headers, "content-type"),
        "user_agent": header(headers, "user-agent"),
        "originator": header(headers, "originator"),
        "anthropic_version": header(headers, "anthropic-version"),
        "anthropic_beta": header(headers, "anthropic-beta"),
        "credential_header": credential_header,
        "credential_length": credential_length,
        "tool_names": [tool.name for tool in view.tools] if view is not None else None,
        "tool_results": view.tool_results if view is not None else None,
        "replayed_reasoning": view.replayed_reasoning if view is not None else None,
        "instruction_text": view.instruction_text if view is not None else None,
        "system_cache_control": view.system_cache_control if view is not None else None,
        "first_user_text": view.first_user_text if view is not None else None,
        "item_kinds": list(view.item_kinds) if view is not None else None,
        "output_bound": view.output_bound if view is not None else None,
        "store": view.store if view is not None else None,
        "include": view.include if view is not None else None,
        "body_bytes": len(body) if body else None,
        "body_trailing_newline": body.endswith(b"\n") if body else None,
        "body_sha256": sha256_hex(body) if body else None,
        "answer": exchange.answer.label,
    }
    if with_body:
        line["body"] = admitted.value if admitted is not None else None
    return compact(line) + b"\n"
