"""The auditor after the session (docs/hermetic.md#auditor): the baseline recorded at start, the re-checks, and
the invocation ``<PREFIX words…> --spec <FILE> --transcript <transcript> <AUDITOR_ARGS…>`` with
metaharness's own environment and working directory, its stderr relayed."""

from __future__ import annotations

import subprocess

from returns.result import Failure, Result

from metaharness.pure.audit_report import AuditBaseline, AuditorOutcome, auditor_outcome, recheck_audit
from metaharness.pure.options import AuditPairing, RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.shell.auditor import gather_audit_facts
from metaharness.shell.bounded_reads import open_regular


def file_sha256(path: str | None) -> str | None:
    """The sha256 of a file's bytes, read in chunks, or ``None`` when it cannot be read or is no regular
    file (a FIFO is never waited on). ``hashlib`` (OpenSSL) is loaded here: a run with no auditor needs none of it."""
    if path is None:
        return None
    import hashlib

    try:
        with open_regular(path) as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def audit_baseline(options: RunOptions, pairing: AuditPairing) -> AuditBaseline | None:
    """What is recorded at start for the re-checks: the spec's sha256 and the auditor program's
    resolved path and sha256 (``None`` when no auditor is named)."""
    if pairing.auditor_program is None:
        return None
    return AuditBaseline(
        spec_sha256=file_sha256(options.spec) or "",
        auditor_program=pairing.auditor_program,
        auditor_sha256=file_sha256(pairing.auditor_program) or "",
    )


def run_auditor(
    options: RunOptions, baseline: AuditBaseline, caller_path: str, transcript: str
) -> Result[AuditorOutcome, Refusal]:
    """Re-check the pairing (checks 1–5, the spec's and the program's digests), then run the auditor
    and read its verdict rows. ``caller_path`` is the PATH ``run`` itself was started with;
    ``transcript`` the retained transcript. Refusals: ``spec-unreadable``, ``auditor-not-invokable``,
    ``auditor-failed``, ``no-verdict-rows`` (all exit 2)."""
    facts = gather_audit_facts(options, caller_path)
    rechecked = recheck_audit(
        options, facts, baseline, file_sha256(options.spec), file_sha256(baseline.auditor_program)
    )
    if isinstance(rechecked, Failure):
        return rechecked
    words = rechecked.unwrap().auditor_words
    argv = [*words, "--spec", str(options.spec), "--transcript", transcript, *options.auditor_args]
    try:
        completed = subprocess.run(
            argv, executable=baseline.auditor_program, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, check=False
        )
    except OSError as error:
        return Failure(Refusal("auditor-failed", f"the auditor {words[0]} could not be started: {error.strerror}"))
    return auditor_outcome(words, completed.returncode, completed.stdout)
