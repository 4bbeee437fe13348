"""The wind-up every kind's run shares: the audit baseline kept from stage 2, the event writer that
keeps what the report reads, the report and the audited exit, and the ``--retain-dir`` copies
(docs/cli.md#run; docs/hermetic.md#auditor, #audit-report, #audited-exit; docs/events.md#wind-up-and-signals,
docs/hermetic.md#verdicts, #hermetic-modes).

A run builds one :class:`RunAudit` while it stages (its refusals are stage 2's), writes every event
through :meth:`RunAudit.write_event`, and after the live loop has returned, while the scratch tree
still holds the transcript, asks :meth:`RunAudit.exit_code` for the exit. Only the facts the verdicts
compare the record against (:class:`VerdictFacts`) and the files a kind retains are the kind's own.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Callable, Sequence

import msgspec
from returns.result import Failure

from metaharness.pure.adapters import adapter_of
from metaharness.pure.audit_report import AuditorOutcome, audit_report, audited_exit, report_facts
from metaharness.pure.events import Event, RouteTraffic, SessionStarted, WarningRaised, read_event
from metaharness.pure.hermetic import VerdictFacts
from metaharness.pure.options import RunOptions, check_audit_pairing
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_stages import unaudited_exit
from metaharness.pure.stream_amendment import Amendment, amend
from metaharness.pure.witness import RouteAccount
from metaharness.shell.auditor import gather_audit_facts
from metaharness.shell.auditor_invocation import audit_baseline, run_auditor
from metaharness.shell.facts import directory_identity
from metaharness.shell.refusals import refuse
from metaharness.shell.run_limits import RunLimits
from metaharness.shell.staging import take, write_event

CLOSING_EVENT = b'"event":"stream.closed"'
"""How the one serialiser writes the closing event's name (``metaharness.pure.jsonline.compact``)."""


class RunAudit:
    """What a run keeps for its report: the spec's and the auditor's digests recorded at start
    (docs/hermetic.md#auditor), and, when the run reports (``--audit``, ``--hermetic strict`` or ``on``), every
    payload it wrote. Built in staging: the pairing's refusals raise ``Refused``."""

    def __init__(self, options: RunOptions) -> None:
        pairing = take(check_audit_pairing(options, gather_audit_facts(options, os.environ.get("PATH", ""))))
        self.options = options
        self.baseline = audit_baseline(options, pairing)
        self.reporting = options.audited() or options.hermetic == "on"
        self.payloads: list[Event] = []
        self.limits = RunLimits(options.timeout)
        self.amendment = Amendment(facts=adapter_of(options.kind).witness, deciding=options.decisions != "observe")
        self.route: Callable[[], RouteTraffic] | None = None
        self.account: Callable[[], RouteAccount] | None = None
        """The route witness's account (docs/decisions.md#the-route-witness), set beside ``route``."""
        self.written = 0
        self.closed = False

    def write_event(self, line: bytes) -> None:
        """One event line to stdout, amended (``DECISION_BYPASSED``, a confined run's ``route``, the route
        witness's reconciliation), its
        payload kept when the run reports; the lines are counted and a closing ``stream.closed`` noted
        (``metaharness.shell.child_end.end_unexpectedly``); a closed stdout stops the run
        (``metaharness.shell.run_limits``)."""
        ending = (self.route or self.account) is not None and b'"event":"session.ended"' in line
        route = self.route() if ending and self.route else None
        account = self.account() if ending and self.account else None
        self.amendment, lines = amend(self.amendment, line, route, account)
        for written in lines:
            self.limits.wrote(write_event(written))
            self.written += 1
            self.closed = self.closed or CLOSING_EVENT in written
            if self.reporting:
                self.payloads.append(read_event(written).unwrap().payload)

    def exit_code(self, planned: VerdictFacts, transcript: str, reason: str) -> int:
        """The run's exit: the refusal ``stdout-closed`` when the stream's reader went away;
        unaudited from the closing ``reason``; else the report on stderr
        (the rows against ``planned`` with the record's cwd, the auditor over ``transcript`` unless
        the run was interrupted) and the audited exit of docs/hermetic.md#audited-exit."""
        lost = self.limits.refusal()
        if lost is not None:
            return refuse(lost)
        if not self.reporting:
            return unaudited_exit(reason)
        started = next((p for p in self.payloads if isinstance(p, SessionStarted)), None)
        record_cwd = directory_identity(started.cwd) if started is not None and started.cwd is not None else None
        facts_of_rows = msgspec.structs.replace(planned, record_cwd=record_cwd)
        auditor: AuditorOutcome | None = None
        refusal: Refusal | None = None
        if self.baseline is not None and reason != "killed":
            ran = run_auditor(self.options, self.baseline, os.environ.get("PATH", ""), transcript)
            if isinstance(ran, Failure):
                refusal = ran.failure()
            else:
                auditor = ran.unwrap()
        facts = report_facts(self.payloads, facts_of_rows, self.options.audited(), auditor, refusal, self.amendment.gaps)
        sys.stderr.write(audit_report(facts))
        sys.stderr.flush()
        return audited_exit(facts) if self.options.audited() else unaudited_exit(facts.stream_reason)


_RETAINED_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_SOURCE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _retain_file(source: str, destination: str) -> None:
    """Copy the regular file ``source`` (never through a link, never a FIFO or device) to a new
    ``destination`` readable by its owner only."""
    descriptor = os.open(source, _SOURCE_FLAGS)
    with os.fdopen(descriptor, "rb") as reading:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return
        os.makedirs(os.path.dirname(destination), mode=0o700, exist_ok=True)
        with os.fdopen(os.open(destination, _RETAINED_FLAGS, 0o600), "wb") as writing:
            shutil.copyfileobj(reading, writing)


def _retain(source: str, destination: str) -> None:
    """A regular file copied, a directory's regular files copied at their places; links (at the top or
    inside), FIFOs, devices and absent sources are skipped."""
    try:
        status = os.lstat(source)
    except FileNotFoundError:
        return
    if stat.S_ISREG(status.st_mode):
        _retain_file(source, destination)
    elif stat.S_ISDIR(status.st_mode):
        for folder, _directories, names in os.walk(source, followlinks=False):
            for name in names:
                path = os.path.join(folder, name)
                if stat.S_ISREG(os.lstat(path).st_mode):
                    _retain_file(path, os.path.join(destination, os.path.relpath(path, source)))


def retain_copies(retain_dir: str | None, run_id: str, copies: Sequence[tuple[str, str]]) -> tuple[WarningRaised, ...]:
    """``--retain-dir`` (docs/cli.md#run): each (source, path under ``DIR/<run id>/``) copied, a directory
    with its tree; the first failure is one ``RETAIN_FAILED`` naming the target and the error. The kind
    chooses the sources, never a credential. ``DIR/<run id>`` is created new (0700) or not at all, so an
    earlier run's directory under the same id, or a link planted there, is never written through; no
    link is followed on either side, and every copy is readable by its owner only (0600)."""
    if retain_dir is None:
        return ()
    target = os.path.join(retain_dir, run_id)
    try:
        os.mkdir(target, 0o700)
        for source, kept in copies:
            _retain(source, os.path.join(target, kept))
    except OSError as error:
        return (WarningRaised(code="RETAIN_FAILED", message=f"{target}: {error.strerror or error}"),)
    return ()
