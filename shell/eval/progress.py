"""What stderr shows while the runs go: a progress bar (runs done of planned, running, and how many
did not pass) when stderr is a terminal, otherwise one line per finished run."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING, Self

from metaharness.pure.eval.results import RunResult, progress_line

if TYPE_CHECKING:
    from rich.progress import Progress as Bar
    from rich.progress import TaskID


class Progress:
    """Counts finished runs and shows them; a context manager so the bar is closed on the way out."""

    def __init__(self, planned: int, jobs: int) -> None:
        self.planned = planned
        self.jobs = jobs
        self.done = 0
        self.not_passed = 0
        self.bar: Bar | None = None
        self.bar_task: TaskID | None = None

    def __enter__(self) -> Self:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            self.bar = Bar(
                TextColumn("runs"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[running]} running"),
                TextColumn("{task.fields[not_passed]} not passed"),
                TimeElapsedColumn(), console=Console(stderr=True), transient=False,
            )
            self.bar.start()
            self.bar_task = self.bar.add_task("runs", total=self.planned, running=self.running(), not_passed=0)
        return self

    def running(self) -> int:
        """Runs in flight: the executors keep ``jobs`` going while any are left."""
        return min(self.jobs, self.planned - self.done)

    def finished(self, result: RunResult) -> None:
        self.done += 1
        self.not_passed += result.state != "finished" or not all(outcome.passed for outcome in result.checks)
        if self.bar is not None and self.bar_task is not None:
            self.bar.update(self.bar_task, advance=1, running=self.running(), not_passed=self.not_passed)
        else:
            sys.stderr.write(progress_line(result, self.done, self.planned) + "\n")
            sys.stderr.flush()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if self.bar is not None:
            self.bar.stop()
