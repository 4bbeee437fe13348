"""``run --timeout DURATION`` and a closed stdout: the two ways a run ends that neither a command
nor a signal from outside gave (docs/cli.md "Ending a run").

Both stop the run as SIGTERM does (pending calls abandoned, the child's group stopped, the wind-up
as usual), so a timed-out run closes ``killed`` after a ``warning{RUN_TIMEOUT}`` and exits 3, and a
run whose stdout was closed ends with the refusal ``stdout-closed`` on stderr and exit 2.
"""

from __future__ import annotations

from metaharness.pure.events import WarningRaised
from metaharness.pure.refusal import Refusal


def run_timeout(seconds: float) -> WarningRaised:
    """``RUN_TIMEOUT``: the run's ``--timeout`` expired and the run was stopped as on SIGTERM."""
    return WarningRaised(
        code="RUN_TIMEOUT",
        message=f"the run's --timeout of {seconds:g}s expired, so metaharness stopped it as it stops a run on SIGTERM",
    )


def stdout_closed(lines_written: int, stopped: str = "metaharness stopped the harness as on SIGTERM") -> Refusal:
    """The refusal for a run (or a replay: ``stopped`` says what stopped) whose event stream's reader closed
    stdout after ``lines_written`` lines."""
    return Refusal(
        "stdout-closed",
        f"the event stream's reader closed stdout after {lines_written} line(s), so {stopped} and the rest of the "
        "stream was lost",
    )
