"""The adapter registry: the one place the kinds are named together.

``Kind`` and ``KINDS`` list them; :func:`adapter_of` gives a kind's ``Adapter`` (defined in
``pure/<kind>/adapter.py``) by an exhaustive match, so a kind added to ``Kind`` without an entry is a
type error. Shared modules look a kind up here and never name one (``tests/test_kind_literals.py``).
"""

from __future__ import annotations

from typing import assert_never

from metaharness.pure.adapter import Adapter
from metaharness.pure.b10x.adapter import ADAPTER as B10X
from metaharness.pure.claude.adapter import ADAPTER as CLAUDE
from metaharness.pure.codex.adapter import ADAPTER as CODEX
from metaharness.pure.gemini.adapter import ADAPTER as GEMINI
from metaharness.pure.kind import Kind


def adapter_of(kind: Kind) -> Adapter:
    """The kind's adapter."""
    match kind:
        case "claude":
            return CLAUDE
        case "codex":
            return CODEX
        case "b10x":
            return B10X
        case "gemini":
            return GEMINI
        case _:
            assert_never(kind)

