"""The live adapter registry: each kind's ``LiveAdapter`` (``metaharness.shell.live_adapter``), looked up by kind.

The shared verbs (``run``, ``doctor``, ``conformance``, the scripted child) call :func:`live_adapter_of`
and never name a kind. A kind's live adapter is its verb dispatch: it imports the verb's heavy modules
only when called, so looking a kind up costs nothing (``tests/test_cli_startup.py``).
"""

from __future__ import annotations

from typing import assert_never

from metaharness.pure.kind import Kind
from metaharness.shell.b10x.adapter import LIVE as B10X
from metaharness.shell.claude.adapter import LIVE as CLAUDE
from metaharness.shell.codex.adapter import LIVE as CODEX
from metaharness.shell.gemini.adapter import LIVE as GEMINI
from metaharness.shell.live_adapter import LiveAdapter


def live_adapter_of(kind: Kind) -> LiveAdapter:
    """The kind's live adapter."""
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
