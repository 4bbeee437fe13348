"""The kinds metaharness drives, named once (docs/DEVELOPING.md#adding-a-fourth-kind).

A leaf: it imports nothing of the project, so the adapter contract, every kind's stages and the
registry (``metaharness.pure.adapters``) can all name a kind without importing one another."""

from __future__ import annotations

from typing import Literal, get_args

Kind = Literal["claude", "codex", "b10x", "gemini"]
KINDS: tuple[Kind, ...] = get_args(Kind)
"""The kinds in the order the CLI lists them."""


def kind_named(name: str) -> Kind | None:
    """The kind spelled ``name``, or ``None`` when no kind is."""
    return next((kind for kind in KINDS if kind == name), None)
