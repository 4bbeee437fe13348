"""The live adapter registry: each kind's shell parts behind one protocol, looked up by kind.

A kind's ``shell/<kind>/adapter.py`` implements :class:`LiveAdapter` (its run, its doctor, its
conformance vectors and, where conformance C3 scripts the vendor, the scripted child's record); the
shared verbs (``run``, ``doctor``, ``conformance``, the scripted child) call :func:`live_adapter_of`
and never name a kind. The implementations import their heavy modules only when called, so looking a
kind up costs nothing (``tests/test_cli_startup.py``).
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Protocol, assert_never

import msgspec

from metaharness.pure.adapters import Kind
from metaharness.pure.refusal import Refusal
from metaharness.shell.b10x.adapter import LIVE as B10X
from metaharness.shell.claude.adapter import LIVE as CLAUDE
from metaharness.shell.codex.adapter import LIVE as CODEX
from metaharness.shell.gemini.adapter import LIVE as GEMINI

if TYPE_CHECKING:
    from metaharness.pure.options import RunOptions


class VectorReport(msgspec.Struct, frozen=True):
    """A kind's conformance vectors: (status, line) per vector, the summary line and the contract line."""

    results: tuple[tuple[str, str], ...]
    summary: str
    contract: bytes


class ScriptedChild(Protocol):
    """Conformance C3's scripted child for a kind: where the vendor writes its record, and which record
    line announces the call its hook is asked about."""

    def announces_call(self, line: bytes) -> bool: ...

    def record_sink(self) -> IO[bytes]: ...


class LiveAdapter(Protocol):
    """A kind's live parts."""

    def run(self, options: RunOptions) -> int:
        """Run the checked options from stage 5 on; the exit code."""
        ...

    def doctor(self) -> int:
        """Resolve, probe and flag-check the kind's binary, print the doctor lines; the exit code."""
        ...

    def vectors(self) -> VectorReport | Refusal:
        """Run the kind's conformance vectors, or the refusal of a vector that cannot be loaded."""
        ...

    def scripted_child(self) -> ScriptedChild | None:
        """The scripted child of conformance C3, or ``None`` when the kind's C3 scripts no vendor."""
        ...


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
