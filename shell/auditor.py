"""The auditor's facts: what stage 2 of ``run`` decides over (docs/hermetic.md#auditor)."""

from __future__ import annotations

from metaharness.pure.options import AuditFacts, RunOptions, split_auditor_prefix
from metaharness.shell.facts import gather_program_candidates, readable_regular_file


def gather_audit_facts(options: RunOptions, caller_path: str) -> AuditFacts:
    """Whether ``--spec`` is a readable regular file, and the candidates for the auditor's first word
    on ``caller_path``, the PATH ``run`` itself was started with (the PATH the auditor inherits)."""
    words = split_auditor_prefix(options.auditor) if options.auditor is not None else ()
    return AuditFacts(
        spec_readable=readable_regular_file(options.spec),
        caller_path=caller_path,
        auditor_candidates=gather_program_candidates(words[0], caller_path) if words else {},
    )
