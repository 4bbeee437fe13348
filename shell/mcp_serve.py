"""``metaharness mcp-serve``: the owned tool surface or a catalogue over MCP on stdio (spec 10 §11)."""

from __future__ import annotations

from metaharness.pure.options import check_serve_pairing
from metaharness.pure.refusal import Refusal
from metaharness.shell.refusals import refuse
from returns.result import Failure


def serve(*, workspace: str, writable: bool, allow_program: tuple[str, ...], catalogue: str | None) -> int:
    """Serve on stdio until end of file (exit 0), or refuse at startup (exit 2) by spec 10 §11 and
    spec 30 §12. Serving is not built yet: after the option pairing it refuses ``not-built``."""
    paired = check_serve_pairing(writable=writable, allow_program=allow_program, catalogue=catalogue)
    if isinstance(paired, Failure):
        return refuse(paired.failure())
    return refuse(
        Refusal(
            "not-built",
            "mcp-serve is not built in this build: it waits for the owned surface, the catalogue and "
            "the MCP wire (spec 30 §10-§12)",
        )
    )
