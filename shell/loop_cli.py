"""``b10x-harness``: the loop's command line (docs/loop.md#command-line).

``-V``/``--version`` first answers from the installed metadata before the command line, the wires or
the HTTP client are imported (metaharness probes ``<program> --version`` beside every spawn,
docs/adapters/b10x.md#program-and-version); anything else is parsed and run by :mod:`metaharness.shell.loop.command`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from metaharness.shell.loop.version import VERSION_FLAGS, print_version
from metaharness.shell.standard_streams import drop_stdout, stand_in_closed_streams


def main(argv: Sequence[str] | None = None) -> None:
    """Console script entry: the version at once, or the parsed command's exit code (docs/loop.md#loop-exit-codes);
    a closed standard stream gets its stand-in first (docs/cli.md#closed-standard-streams)."""
    stand_in_closed_streams()
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] and args[0] in VERSION_FLAGS:
        try:
            print_version()
        except BrokenPipeError:
            drop_stdout()
            sys.stderr.write("error: stdout was closed before the version was written\n")
            sys.exit(1)
        sys.exit(0)
    from metaharness.shell.loop.command import run_cli

    sys.exit(run_cli(args))
