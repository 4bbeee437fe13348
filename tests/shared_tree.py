"""The read-only ``shared/`` tree (the seeds, the reference loop's records) that sits beside the
repository: ``<checkout>/../shared``, wherever the checkout was cloned; and the reference example
stream, which the repository carries itself in docs/events.md."""

from __future__ import annotations

from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
ABSENT = f"the shared tree is not beside this checkout ({SHARED} is absent)"
SPEC_EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "events.md"
"""The page that prints the reference example stream (docs/events.md#example-stream)."""


def spec_example_stream() -> bytes:
    """The example stream of docs/events.md#example-stream, as the page prints it."""
    text = SPEC_EXAMPLE.read_text(encoding="utf-8").split("## Example stream", 1)[1]
    block = text.split("```\n", 2)[1]
    return block.encode("utf-8")
