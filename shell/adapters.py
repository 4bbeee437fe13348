"""The live adapter registry: each kind's ``LiveAdapter`` (``metaharness.shell.live_adapter``), looked up by kind.

The shared verbs (``run``, ``doctor``, ``conformance``, the scripted child) call :func:`live_adapter_of`
and never name a kind. A kind's live adapter is its verb dispatch: it imports the verb's heavy modules
only when called, and each case imports only its own kind's adapter, so looking a kind up costs nothing and a
run loads no other kind's live parts (``tests/test_cli_startup.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from metaharness.pure.kind import Kind

if TYPE_CHECKING:
    from metaharness.shell.live_adapter import LiveAdapter


def live_adapter_of(kind: Kind) -> LiveAdapter:
    """The kind's live adapter."""
    match kind:
        case "claude":
            from metaharness.shell.claude.adapter import LIVE as CLAUDE

            return CLAUDE
        case "codex":
            from metaharness.shell.codex.adapter import LIVE as CODEX

            return CODEX
        case "b10x":
            from metaharness.shell.b10x.adapter import LIVE as B10X

            return B10X
        case "gemini":
            from metaharness.shell.gemini.adapter import LIVE as GEMINI

            return GEMINI
        case _:
            assert_never(kind)
