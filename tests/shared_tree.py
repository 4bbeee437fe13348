"""The read-only ``shared/`` tree (the spec, the seeds, the reference loop's records) that sits beside
the repository: ``<checkout>/../shared``, wherever the checkout was cloned."""

from __future__ import annotations

from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
ABSENT = f"the shared tree is not beside this checkout ({SHARED} is absent)"
SPEC_EXAMPLE = SHARED / "spec" / "20-events-and-frames.md"


def spec_example_stream() -> bytes:
    """The example stream of spec 20 §10, as the spec prints it."""
    text = SPEC_EXAMPLE.read_text(encoding="utf-8").split("## 10. Example stream", 1)[1]
    block = text.split("```\n", 2)[1]
    return block.encode("utf-8")
