"""The live adapter contract: a kind's shell parts behind one protocol (docs/DEVELOPING.md#adding-a-fourth-kind).

A kind's ``shell/<kind>/adapter.py`` implements :class:`LiveAdapter` (its run, its doctor, its conformance
vectors and, where conformance C3 scripts the vendor, the scripted child's record); the registry
``metaharness.shell.adapters`` collects them. A leaf of the shell: it imports no kind.
"""

from __future__ import annotations

import json
from typing import IO, TYPE_CHECKING, Any, Protocol

import msgspec

from metaharness.pure.refusal import Refusal

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

    def start(self) -> None:
        """What the vendor does before its first record line (claude: answer ``initialize``)."""
        ...

    def ask(self, hook: str, question: bytes) -> bytes:
        """Ask about the call as the vendor does, with the captured hook request; the answer's bytes."""
        ...


def record_object(line: bytes) -> dict[str, Any]:
    """A scripted child's record line as a JSON object; a line that is not one is the empty object, which
    announces no call."""
    try:
        record: Any = json.loads(line)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


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
