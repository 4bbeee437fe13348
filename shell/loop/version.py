"""The loop's version, as ``b10x-harness --version`` prints it (docs/loop.md#command-line): this
distribution's installed version."""

from __future__ import annotations

import importlib.metadata
import sys

VERSION_FLAGS = ("-V", "--version")


def version() -> str:
    """This distribution's installed version."""
    return importlib.metadata.version("metaharness")


def print_version() -> None:
    """``b10x-harness <version>`` on stdout."""
    sys.stdout.write(f"b10x-harness {version()}\n")
    sys.stdout.flush()
