"""The wind-up every kind's run shares: the audit baseline kept from stage 2, the event writer that
keeps what the report reads, the report and the audited exit, and the ``--retain-dir`` copies
(docs/cli.md#run; docs/hermetic.md#auditor, #audit-report, #audited-exit; docs/events.md#wind-up-and-signals,
docs/hermetic.md#verdicts, #hermetic-modes).

A run builds one :class:`RunAudit` while it stages (its refusals are stage 2's), hands every event value
to :meth:`RunAudit.write_event` (the stream's one writer, ``metaharness.pure.stream_writer``, amends, numbers
and encodes it; the audit keeps the values it wrote, never reading a line back, docs/DEVELOPING.md#the-event-path),
and after the live loop has returned, while the scratch tree still holds the transcript, asks
:meth:`RunAudit.exit_code` for the exit. Only the facts the verdicts
compare the record against (:class:`VerdictFacts`) and the files a kind retains are the kind's own.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec
from returns.result import Failure, Success

from metaharness.pure.adapters import adapter_of
from metaharness.pure.audit_report import AuditorOutcome, audit_report, audited_exit, report_facts
from metaharness.pure.events import (
    Event,
    EventLine,
    EventValue,
    RouteTraffic,
    RowCheck,
    SessionEnded,
    SessionStarted,
    Stream,
    StreamClosed,
    WarningRaised,
)
from metaharness.pure.hermetic import VerdictFacts, row_verdicts
from metaharness.pure.options import RunOptions, check_audit_pairing
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_stages import failure_cause, failure_line, unaudited_exit
from metaharness.pure.stream_amendment import Amendment
from metaharness.pure.stream_writer import StreamWriter, write
from metaharness.pure.witness import RouteAccount
from metaharness.pure.workspace_diff import FileState, workspace_diff
from metaharness.shell.auditor import gather_audit_facts
from metaharness.shell.auditor_invocation import audit_baseline, run_auditor
from metaharness.shell.child_tree import ChildDir, copy_data
from metaharness.shell.events_file import EventsFile, open_events_file
from metaharness.shell.refusals import refuse
from metaharness.shell.run_limits import RunLimits
from metaharness.shell.staging import Refused, take, write_event
from metaharness.shell.tree_facts import directory_identity
from metaharness.shell.workspace_snapshot import snapshot

if TYPE_CHECKING:
    from metaharness.pure.run_view import ViewState


def _progress_start() -> ViewState:
    """The progress view's first state. The view (and the projection it reads) is imported only for a terminal's
    stderr, never on the way to a spawn whose progress nobody sees."""
    from metaharness.pure.run_view import ViewState

    return ViewState()


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
        amendment = Amendment(facts=adapter_of(options.kind).witness, deciding=options.decisions != "observe")
        self.writer = StreamWriter(Stream(""), amendment)
        self.route: Callable[[], RouteTraffic] | None = None
        self.account: Callable[[], RouteAccount] | None = None
        """The route witness's account (docs/decisions.md#the-route-witness), set beside ``route``."""
        self.closed = False
        self.started: SessionStarted | None = None
        self.rows_facts: Callable[[], VerdictFacts] | None = None
        self.progress: ViewState | None = _progress_start() if not options.quiet and sys.stderr.isatty() else None
        self.workspace: tuple[str, dict[str, FileState]] | None = None
        self.events: EventsFile | None = None
        if options.events is not None:
            opened = open_events_file(options.events)
            if isinstance(opened, Refusal):
                raise Refused(opened)
            self.events = opened
        self.closing_reason: str | None = None
        self.cause: str | None = None
        """What a failed run's stderr line names (``metaharness.pure.run_stages.failure_cause``)."""

    def names_run(self, run: str, program: str) -> None:
        """The stream's run id is ``run`` and ``session.started.program`` is ``program``, the resolved path of
        what this run starts."""
        amendment = msgspec.structs.replace(self.writer.amendment, program=program)
        self.writer = StreamWriter(Stream(run), amendment)

    def write_event(self, value: EventValue) -> None:
        """One event value through the stream's writer (amended: ``DECISION_BYPASSED``, a confined run's
        ``route``, the route witness's reconciliation, the rows as checked; numbered and encoded), each line to
        ``--events`` FILE (``metaharness.shell.events_file``) and then stdout, its payload kept when the run
        reports; a closing ``stream.closed`` is noted (``metaharness.shell.child_end.end_unexpectedly``) with the
        run's outcome as its reason; a closed stdout stops the run (``metaharness.shell.run_limits``)."""
        payload = value.payload
        if self.started is None and isinstance(payload, SessionStarted):
            self.started = payload
        ending = isinstance(payload, SessionEnded)
        route = self.route() if ending and self.route else None
        account = self.account() if ending and self.account else None
        self.writer, lines = write(self.writer, value, route, account, self.checked_rows() if ending else None)
        for written in lines:
            if self.events is not None:
                self.events.write(written.encoded)
            self.limits.wrote(write_event(written.encoded))
            self._kept(written.line)

    def _kept(self, line: EventLine) -> None:
        """What the audit keeps of one line written: the closing reason, the failure's cause, the progress
        shown and, when the run reports, its payload."""
        payload = line.payload
        if isinstance(payload, StreamClosed):
            self.closed = True
            self.closing_reason = payload.reason
        if isinstance(payload, WarningRaised | SessionEnded):
            self.cause = failure_cause(self.cause, payload)
        if self.progress is not None:
            self._show_progress(line)
        if self.reporting:
            self.payloads.append(payload)

    def arm(self, cwd: str) -> None:
        """The live loop is about to start: under ``--retain-dir`` the working directory is read for the
        workspace diff, then the run's limits are armed."""
        if self.options.retain_dir is not None:
            self.workspace = (cwd, snapshot(cwd))
        self.limits.arm()

    def workspace_diff(self) -> bytes | None:
        """The working directory's changes since :meth:`arm`, for ``--retain-dir``; ``None`` when not kept."""
        if self.workspace is None:
            return None
        cwd, before = self.workspace
        return workspace_diff(before, snapshot(cwd))

    def _show_progress(self, line: EventLine) -> None:
        """The progress lines one more event adds, on stderr (a terminal's, never stdout)."""
        if self.progress is None:
            return
        from metaharness.pure.run_view import fold_view, progress_lines

        after = fold_view(self.progress, line, 0.0)
        lines = progress_lines(self.progress, after, line)
        self.progress = after
        if lines:
            sys.stderr.write("".join(text + "\n" for text in lines))
            sys.stderr.flush()

    def checked_rows(self) -> tuple[RowCheck, ...] | None:
        """The hermetic rows as the audit computes them (``row_verdicts`` over ``session.started`` and the
        kind's ``rows_facts`` with the record's cwd), for ``session.ended.rows``; none before both are known."""
        if self.rows_facts is None or self.started is None:
            return None
        cwd = self.started.cwd
        facts = msgspec.structs.replace(self.rows_facts(), record_cwd=directory_identity(cwd) if cwd is not None else None)
        return tuple(RowCheck(row=row.row, verdict=row.verdict, detail=row.detail)
                     for row in row_verdicts(self.started, facts))  # fmt: skip

    def exit_code(self, planned: VerdictFacts, transcript: str, reason: str, lost_record: Refusal | None = None) -> int:
        """The run's exit: the refusal ``stdout-closed`` when the stream's reader went away, else
        ``events-write-failed`` when ``--events`` FILE lost a line, else ``lost_record`` (the transcript's
        ``transcript-write-failed``); unaudited from the closing reason as written
        (the run's outcome; else ``reason``); else the report on stderr
        (the rows against ``planned`` with the record's cwd, the auditor over ``transcript`` unless
        the run was interrupted) and the audited exit of docs/hermetic.md#audited-exit."""
        if self.events is not None:
            self.events.close()
        lost = self.limits.refusal() or (self.events.refusal() if self.events is not None else None) or lost_record
        if lost is not None:
            return refuse(lost)
        reason = self.closing_reason or reason
        if not self.reporting:
            return self._told(unaudited_exit(reason), reason)
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
        facts = report_facts(self.payloads, facts_of_rows, self.options.audited(), auditor, refusal, self.writer.amendment.gaps)
        sys.stderr.write(audit_report(facts))
        sys.stderr.flush()
        if self.options.audited():
            return audited_exit(facts)
        return self._told(unaudited_exit(facts.stream_reason), facts.stream_reason)

    def _told(self, code: int, reason: str) -> int:
        """``code``, after the failure line on stderr when it is 1 or 3 and ``--quiet`` is not given
        (docs/cli.md#progress-on-stderr); an audited run's report names its exit instead."""
        if code in (1, 3) and not self.options.quiet:
            sys.stderr.write(failure_line(self.writer.stream.run if self.closed else None, reason, code, self.cause))
            sys.stderr.flush()
        return code


_RETAINED_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _retain_file(source: int, destination: str) -> None:
    """Copy the open regular file ``source`` (closed here) to a new ``destination`` readable by its owner only."""
    try:
        _retain_folders(os.path.dirname(destination))
        target = os.open(destination, _RETAINED_FLAGS, 0o600)
        try:
            copy_data(source, target)
        finally:
            os.close(target)
    finally:
        os.close(source)


def _retain_folders(path: str) -> None:
    """The folders of ``path`` made (0700) from the top down, one at a time: a copy as deep as the child
    made its tree raises no ``RecursionError`` (``os.makedirs`` recurses), only an ``OSError``."""
    made = "/" if path.startswith("/") else ""
    for part in path.split("/"):
        made = os.path.join(made, part)
        if part and not os.path.isdir(made):
            try:
                os.mkdir(made, 0o700)
            except FileExistsError:
                pass


def _retain(scratch: ChildDir, source: str, destination: str) -> None:
    """A regular file with one name copied, a directory's such files copied at their places; the source is
    reached from the scratch root one name at a time (``metaharness.shell.child_tree``), so links (at the
    top, inside or on the way), FIFOs, devices and absent sources are skipped."""
    relative = os.path.relpath(source, scratch.where)
    if relative == ".." or relative.startswith("../"):
        return
    folder, name = os.path.split(relative)
    parent = scratch.reach(folder)
    if isinstance(parent, Failure):
        return
    directory = parent.unwrap()
    try:
        status = directory.status(name)
        mode = status.st_mode if status is not None else 0
        if stat.S_ISREG(mode):
            opened = directory.reader(name)
            if isinstance(opened, Success):
                _retain_file(opened.unwrap(), destination)
        elif stat.S_ISDIR(mode):
            inner = directory.sub(name)
            if isinstance(inner, Success):
                try:
                    for path, fd in inner.unwrap().regular_files():
                        _retain_file(fd, os.path.join(destination, path))
                finally:
                    inner.unwrap().close()
    finally:
        directory.close()


def retain_copies(
    retain_dir: str | None, run_id: str, scratch: str, copies: Sequence[tuple[str, str]], workspace: bytes | None = None
) -> tuple[WarningRaised, ...]:
    """``--retain-dir`` (docs/cli.md#run): each (source under ``scratch``, path under ``DIR/<run id>/``)
    copied, a directory with its tree; the first failure is one ``RETAIN_FAILED`` naming the target and
    the error. The kind chooses the sources, never a credential. ``DIR/<run id>`` is created new (0700)
    or not at all, so an earlier run's directory under the same id, or a link planted there, is never
    written through; no link is followed on either side (docs/adapters/common.md#child-trees), and every
    copy is readable by its owner only (0600). ``workspace``, the working directory's diff
    (:meth:`RunAudit.workspace_diff`), is written as ``workspace.diff`` beside them."""
    if retain_dir is None:
        return ()
    target = os.path.join(retain_dir, run_id)
    try:
        os.mkdir(target, 0o700)
        root = ChildDir.open(scratch)
        try:
            for source, kept in copies:
                _retain(root, source, os.path.join(target, kept))
        finally:
            root.close()
        if workspace is not None:
            with os.fdopen(os.open(os.path.join(target, "workspace.diff"), _RETAINED_FLAGS, 0o600), "wb") as kept_diff:
                kept_diff.write(workspace)
    except OSError as error:
        return (WarningRaised(code="RETAIN_FAILED", message=f"{target}: {error.strerror or error}"),)
    return ()
