"""The read-only ``shared/`` tree (the spec, the seeds, the reference loop's records) that sits beside
the repository: ``<checkout>/../shared``, wherever the checkout was cloned."""

from __future__ import annotations

from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
ABSENT = f"the shared tree is not beside this checkout ({SHARED} is absent)"
