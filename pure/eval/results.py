"""One run's result and what a batch of them adds up to (docs/eval.md "Results").

``run_result`` scores a finished process: its state from how it ended, its census from the stream,
the verdict words from its report on stderr, each check's outcome. ``batch_exit`` is the command's
exit; ``result_table`` the task × arm table with the per-arm totals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import msgspec

from metaharness.pure.eval.checks import Check, CheckOutcome, RunFacts, score_check

State = Literal["finished", "timed-out", "failed-to-start", "lost"]
REFUSAL_EXIT = 2
_VERDICT_LINE = re.compile(rb"^(control|audit) verdict: (\w+)", re.MULTILINE)


class RunResult(msgspec.Struct, frozen=True):
    """``result.json`` of one run."""

    task: str
    arm: str
    repeat: int
    state: State
    exit: int | None
    census: dict[str, Any] | None
    control: str | None
    audit: str | None
    checks: tuple[CheckOutcome, ...]
    duration_ms: int
    attempts: int


def decode_events(stdout: bytes) -> tuple[dict[str, Any], ...]:
    """The stream's lines that are JSON objects; any other line is left out."""
    events = []
    for line in stdout.splitlines():
        try:
            value = msgspec.json.decode(line)
        except msgspec.DecodeError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return tuple(events)


def report_verdicts(stderr: bytes) -> tuple[str | None, str | None]:
    """The control and audit verdict words of the run's report on stderr, when it printed them."""
    found = {name.decode(): word.decode() for name, word in _VERDICT_LINE.findall(stderr)}
    return found.get("control"), found.get("audit")


def run_state(exit_code: int | None, timed_out: bool, events: Sequence[dict[str, Any]]) -> State:
    """``timed-out`` when the driver had to stop it; ``failed-to-start`` when it never spawned (no
    exit, or a refusal with no ``session.started``); else ``finished``."""
    if timed_out:
        return "timed-out"
    started = any(event.get("event") == "session.started" for event in events)
    if exit_code is None or (exit_code == REFUSAL_EXIT and not started):
        return "failed-to-start"
    return "finished"


def run_result(
    identity: tuple[str, str, int],
    checks: Sequence[Check],
    facts: RunFacts,
    *,
    timed_out: bool,
    duration_ms: int,
    attempts: int,
) -> RunResult:
    """The result of one run of ``identity`` (task, arm, repeat) from the facts gathered after it."""
    ended = [event for event in facts.events if event.get("event") == "session.ended"]
    census = ended[-1].get("census") if ended else None
    task, arm, repeat = identity
    return RunResult(
        task=task,
        arm=arm,
        repeat=repeat,
        state=run_state(facts.exit, timed_out, facts.events),
        exit=facts.exit,
        census=census if isinstance(census, dict) else None,
        control=facts.control,
        audit=facts.audit,
        checks=tuple(score_check(check, facts) for check in checks),
        duration_ms=duration_ms,
        attempts=attempts,
    )


def lost_result(identity: tuple[str, str, int], attempts: int) -> RunResult:
    """A run whose worker died on every attempt: planned, never finished, still in the summary."""
    task, arm, repeat = identity
    return RunResult(
        task=task, arm=arm, repeat=repeat, state="lost", exit=None, census=None, control=None, audit=None,
        checks=(), duration_ms=0, attempts=attempts,
    )


def result_document(result: RunResult) -> bytes:
    return msgspec.json.encode(result)


def read_result(data: bytes) -> RunResult | None:
    """A ``result.json`` that is complete: every field present and well typed, and a state other
    than ``lost`` (a lost run is run again on ``--resume``); else None."""
    try:
        result = msgspec.json.decode(data, type=RunResult)
    except msgspec.DecodeError:
        return None
    return result if result.state != "lost" else None


def batch_exit(results: Iterable[RunResult]) -> int:
    """0 when every run finished and every check passed, 3 when a run did not finish, else 1."""
    exit_code = 0
    for result in results:
        if result.state != "finished":
            return 3
        if not all(outcome.passed for outcome in result.checks):
            exit_code = 1
    return exit_code


def progress_line(result: RunResult, done: int, planned: int) -> str:
    """The line printed per finished run when stderr is not a terminal."""
    passed = sum(outcome.passed for outcome in result.checks)
    attempts = f", attempt {result.attempts}" if result.attempts > 1 else ""
    return (
        f"[{done}/{planned}] {result.task} {result.arm} #{result.repeat}: {result.state}, "
        f"{passed}/{len(result.checks)} checks, {result.duration_ms / 1000:.1f} s{attempts}"
    )


class Cell(msgspec.Struct, frozen=True):
    """One task × arm cell: checks passed and counted over its repeats, and the states that were not
    ``finished`` (in plan order, once each)."""

    passed: int
    total: int
    unfinished: tuple[str, ...]

    def text(self) -> str:
        marks = "".join(f" {state}" for state in self.unfinished)
        return f"{self.passed}/{self.total}{marks}"


def result_cells(results: Iterable[RunResult]) -> dict[tuple[str, str], Cell]:
    """The cells keyed by (task, arm)."""
    cells: dict[tuple[str, str], Cell] = {}
    for result in results:
        before = cells.get((result.task, result.arm), Cell(passed=0, total=0, unfinished=()))
        unfinished = before.unfinished + ((result.state,) if result.state != "finished" and result.state not in before.unfinished else ())
        cells[(result.task, result.arm)] = Cell(
            passed=before.passed + sum(outcome.passed for outcome in result.checks),
            total=before.total + len(result.checks),
            unfinished=unfinished,
        )
    return cells


def arm_totals(cells: dict[tuple[str, str], Cell], arms: Sequence[str]) -> tuple[str, ...]:
    """Per arm, ``<arm>: P pass / F fail`` over every check of every run."""
    lines = []
    for arm in arms:
        passed = sum(cell.passed for (_, cell_arm), cell in cells.items() if cell_arm == arm)
        total = sum(cell.total for (_, cell_arm), cell in cells.items() if cell_arm == arm)
        lines.append(f"{arm}: {passed} pass / {total - passed} fail")
    return tuple(lines)


def result_table(results: Iterable[RunResult], tasks: Sequence[str], arms: Sequence[str]) -> str:
    """The task × arm table, columns padded, then the totals per arm; each line ends ``\\n``."""
    cells = result_cells(results)
    rows = [["task", *arms]] + [
        [task, *(cells[(task, arm)].text() if (task, arm) in cells else "-" for arm in arms)] for task in tasks
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ["  ".join(word.ljust(width) for word, width in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "".join(line + "\n" for line in [*lines, "", *arm_totals(cells, arms)])
