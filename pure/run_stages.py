"""The generic decisions of a run's wind-up and deadline (docs/events.md#warning-codes, #stream-ending;
docs/decisions.md#deadlines; docs/hermetic.md#exit-codes).

Which word closes the stream, the ``NO_TERMINAL_RECORD`` text, metaharness's own decision deadline
and the exit code of an unaudited run, the ``--strict-version`` refusal: the same for every adapter.
"""

from __future__ import annotations

from collections.abc import Collection

import msgspec

from metaharness.pure.budgets import DECISION_MARGIN_MS, VENDOR_BUDGET_MS
from metaharness.pure.events import Event, Exited, Process, RouteTraffic, SessionEnded, WarningRaised
from metaharness.pure.refusal import Refusal
from metaharness.pure.terminal_text import shown

STDERR_TAIL_BYTES = 2048


def decision_budget_ms(decision_deadline_s: float | None, default_ms: int) -> int:
    """The vendor's budget for one decision (docs/decisions.md#deadlines): the kind's own, or under
    ``run --decision-deadline`` the deadline in whole seconds (rounded up) + 5000 ms, so that
    :func:`decision_deadline` of it is the deadline asked for and a hook declares it in whole seconds."""
    if decision_deadline_s is None:
        return default_ms
    return -int(-decision_deadline_s // 1) * 1000 + DECISION_MARGIN_MS


def decision_deadline(vendor_budget_ms: int = VENDOR_BUDGET_MS) -> int:
    """metaharness's own deadline: the vendor budget − 5000 ms when it exceeds 5000, else half of it
    (docs/decisions.md#deadlines): 25000 ms by default."""
    return vendor_budget_ms - DECISION_MARGIN_MS if vendor_budget_ms > DECISION_MARGIN_MS else vendor_budget_ms // 2


def deadline_reason(deadline_ms: int, vendor_budget_ms: int) -> str:
    """The deny reason of an expired deadline (docs/decisions.md#deadlines), numbers substituted."""
    return (
        f"metaharness's own {deadline_ms}ms decision deadline expired before an answer arrived; it is strictly "
        f"less than the vendor's {vendor_budget_ms}ms timeout so the refusal is metaharness's and not an ambiguity"
    )


def closing_reason(*, halted: bool, killed: bool, stop: str | None, budget_stops: Collection[str]) -> str:
    """``stream.closed.reason`` in the order of docs/events.md#stream-ending: ``steer-halt``, ``killed``, ``error`` with
    no terminal record, ``budget`` for a budget stop (always including ``budget-exhausted``),
    ``completed``, else ``error``. ``stop`` is the terminal record's stop word, ``None`` when none was read."""
    if halted:
        return "steer-halt"
    if killed:
        return "killed"
    if stop is None:
        return "error"
    if stop in budget_stops or stop == "budget-exhausted":
        return "budget"
    return "completed" if stop in ("completed", "success") else "error"


class RunOutcome(msgspec.Struct, frozen=True):
    """How a run closes: its ``stream.closed.reason`` and, when the record's ``completed`` was overruled, why."""

    reason: str
    overruled: str | None = None


def run_outcome(record: str, process: Process, route: RouteTraffic | None) -> RunOutcome:
    """The worst of what the record, the child's exit and the route say (docs/events.md#stream-ending): the record's
    closing reason, except that ``completed`` becomes ``error`` when the child exited non-zero or a confined run's
    route carried no model request. A signal's end is left to the record: metaharness's own stop ends a child so."""
    if record != "completed":
        return RunOutcome(record)
    if isinstance(process, Exited) and process.code != 0:
        return RunOutcome("error", f"the harness exited {process.code} after a terminal record that reported success")
    if route is not None and route.requests == 0:
        return RunOutcome("error", "the model route carried no request, so no model answered this run")
    return RunOutcome(record)


def run_failed(outcome: RunOutcome) -> WarningRaised:
    """``RUN_FAILED``: why a record's ``completed`` closes ``error`` (docs/events.md#warning-codes)."""
    return WarningRaised(code="RUN_FAILED", message=f"{outcome.overruled}; the stream closes error")


def no_terminal_record(stderr_tail: bytes) -> WarningRaised:
    """``NO_TERMINAL_RECORD`` with the last ≤ 2048 bytes of the harness's stderr, decoded lossily
    (docs/events.md#warning-codes)."""
    if not stderr_tail:
        return WarningRaised(
            code="NO_TERMINAL_RECORD",
            message="the harness stopped without a terminal record; it wrote nothing on stderr",
        )
    tail = stderr_tail[-STDERR_TAIL_BYTES:].decode("utf-8", "replace")
    return WarningRaised(
        code="NO_TERMINAL_RECORD",
        message=f"the harness stopped without a terminal record; its stderr ended: {tail}",
    )


FAILURE_CAUSES = frozenset({"RUN_FAILED", "NO_TERMINAL_RECORD", "RUN_TIMEOUT"})
"""The warnings a failed run's stderr line names as its cause, the last one written winning."""


def failure_cause(cause: str | None, payload: Event) -> str | None:
    """The cause a failed run's stderr line names after one more event (docs/cli.md#progress-on-stderr): the
    last ``RUN_FAILED``, ``NO_TERMINAL_RECORD`` or ``RUN_TIMEOUT`` message, else an error terminal record."""
    if isinstance(payload, WarningRaised) and payload.code in FAILURE_CAUSES:
        return payload.message
    if isinstance(payload, SessionEnded) and payload.is_error and cause is None:
        detail = payload.subtype or payload.terminal_reason
        return "the harness's terminal record reported an error" + (f" ({detail})" if detail else "")
    return cause


def failure_line(run: str | None, reason: str, code: int, cause: str | None) -> str:
    """The one stderr line of an unaudited run that exits ``code`` 1 or 3: its outcome and its cause (the harness's
    stderr tail among them), on one line, its control characters escaped (docs/view.md#control-characters)."""
    why = "" if cause is None else ": " + " ".join(cause.split())
    return shown(f"metaharness: run {run or 'unknown'} failed (exit {code}): the stream closed {reason}{why}", one_line=True) + "\n"


def unaudited_exit(reason: str) -> int:
    """The exit of an unaudited run or a replay: 0 when the stream closed ``completed`` (a terminal
    record was seen), else 3 (docs/hermetic.md#exit-codes)."""
    return 0 if reason == "completed" else 3


def strict_version_refusal(program: str, version: str | None, pins: tuple[str, ...]) -> Refusal | None:
    """``--strict-version`` (docs/hermetic.md#refusal-order stage 9 (c), docs/adapters/b10x.md#program-and-version,
    docs/adapters/common.md#pins): an unreadable version is ``version-unreadable``, one off the pins ``version-off-pin``
    naming both; else nothing."""
    if version is None:
        return Refusal("version-unreadable", f"{program} --version gave no version")
    if version not in pins:
        return Refusal(
            "version-off-pin",
            f"{program} reports {version}; the adapter is pinned to {', '.join(pins)} and --strict-version refuses it",
        )
    return None
