"""Performing a refusal: its one stderr line, then exit 2 (docs/cli.md)."""

from __future__ import annotations

import sys

from metaharness.pure.refusal import Refusal

REFUSAL_EXIT = 2


def refuse(refusal: Refusal) -> int:
    """Write ``metaharness: <code>: <message>`` to stderr and return the exit code 2."""
    sys.stderr.write(refusal.line() + "\n")
    sys.stderr.flush()
    return REFUSAL_EXIT
