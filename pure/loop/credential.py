"""A credential from its source's text (spec 60 §7.6): trimmed, or reached by an RFC 6901 pointer."""

from __future__ import annotations

from typing import Any

import msgspec
from returns.result import Failure, Result, Success


def resolve_pointer(document: Any, pointer: str) -> Any | None:
    """The value at an RFC 6901 pointer, or ``None`` when the pointer reaches nothing."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        return None
    value = document
    for token in pointer[1:].split("/"):
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and (key == "0" or not key.startswith("0")) and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def credential_from_text(text: str, pointer: str | None, where: str) -> Result[str, str]:
    """The trimmed credential, or why there is none; ``where`` names the source, never the value."""
    if pointer is None:
        value = text.strip()
        return Success(value) if value else Failure(f"the credential at {where} is empty")
    try:
        document = msgspec.json.decode(text.encode())
    except msgspec.DecodeError:
        return Failure(f"the credential at {where} is not a JSON document, so --oauth-token-pointer cannot reach it")
    found = resolve_pointer(document, pointer)
    if not isinstance(found, str) or not found.strip():
        return Failure(f"the pointer `{pointer}` does not reach a non-empty string in the credential at {where}")
    return Success(found.strip())
