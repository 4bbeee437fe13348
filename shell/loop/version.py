"""The loop's version, as ``b10x-harness --version`` prints it (docs/loop.md#command-line): this
distribution's version, read from the package itself so the answer imports nothing else."""

from __future__ import annotations

import sys

from metaharness import __version__

VERSION_FLAGS = ("-V", "--version")


def version() -> str:
    """This distribution's version (``metaharness.__version__``, which its installed metadata is built from)."""
    return __version__


def print_version() -> None:
    """``b10x-harness <version>`` on stdout."""
    sys.stdout.write(f"b10x-harness {version()}\n")
    sys.stdout.flush()
