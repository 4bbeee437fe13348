"""The ``metaharness`` console script and ``python -m metaharness.shell``: SIGINT and SIGTERM are held
before anything else is imported, so a signal in the first milliseconds is a named refusal, never a
traceback or a silent death (``metaharness.shell.run_signals``)."""

from __future__ import annotations

from metaharness.shell.run_signals import hold_signals


def main() -> None:
    """Hold the signals, give a closed standard stream its stand-in, then run the CLI."""
    hold_signals()
    from metaharness.shell.standard_streams import stand_in_closed_streams

    stand_in_closed_streams()
    from metaharness.shell.cli import main as cli_main

    cli_main()
