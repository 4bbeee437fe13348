"""What a console script writes while click parses its command line (``--help``, ``--version``, a group's
help when no verb is named), into a stdout whose reader went away: click swallows the ``BrokenPipeError``
and exits 1 in silence before any verb runs; here it ends as every verb does, with the refusal
``stdout-closed`` and exit 2 (docs/cli.md#closed-standard-streams)."""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import click

from metaharness.shell.refusals import REFUSAL_EXIT
from metaharness.shell.standard_streams import drop_stdout


class ClosedAtParse(click.Command):
    """A command (mixed in before ``click.Group`` for a group) whose parse-time output into a closed stdout
    is ``<program>: stdout-closed: …`` on stderr and its exit, for each console script its own ``program``."""

    program: ClassVar[str] = "metaharness"

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError:
            drop_stdout()
            raise click.exceptions.Exit(self.stdout_closed()) from None

    def stdout_closed(self) -> int:
        """The refusal's line on stderr; the exit."""
        return stdout_closed_refusal(self.program, "the help or version")


def stdout_closed_refusal(program: str, product: str) -> int:
    """``<program>: stdout-closed: …`` naming what was not written whole, on stderr; exit 2."""
    sys.stderr.write(f"{program}: stdout-closed: stdout's reader closed it before {product} was written whole\n")
    sys.stderr.flush()
    return REFUSAL_EXIT
