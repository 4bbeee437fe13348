"""``metaharness doctor claude`` (docs/adapters/common.md#pins, docs/adapters/common.md#doctor): resolve ``claude`` on
the child's PATH as the spawn does, probe ``--version`` and ``--help`` in the constructed environment with a scratch
config home, and check ``--max-turns`` by acceptance."""

from __future__ import annotations

import sys

from metaharness.pure.budgets import PROBE_S
from metaharness.pure.claude.doctor import HIDDEN_FLAGS, acceptance_probe, accepted, doctor_report, version_token
from metaharness.pure.claude.vendor import PROGRAM
from metaharness.pure.refusal import Refusal
from metaharness.shell.facts import run_probe
from metaharness.shell.refusals import refuse
from metaharness.shell.vendor_doctor import probed_vendor


def run_claude_doctor() -> int:
    """Resolve, probe and flag-check ``claude``; exit 0 on pin without a fault, 1 off pin or a fault,
    2 ``program-not-found`` or ``version-unreadable``."""
    with probed_vendor(PROGRAM, "CLAUDE_CONFIG_DIR", PROBE_S, version_token) as probed:
        if isinstance(probed, Refusal):
            return refuse(probed)
        hidden = {}
        for flag in HIDDEN_FLAGS:
            probe = run_probe(acceptance_probe(probed.resolved, flag), probed.env, timeout_s=PROBE_S, cwd=probed.home)
            hidden[flag] = probe is not None and accepted(flag, probe.stderr.decode("utf-8", "replace"))
    report = doctor_report(probed.resolved, probed.version, probed.help_text, hidden)
    sys.stdout.write("".join(line + "\n" for line in report.lines))
    sys.stdout.flush()
    return report.exit_code
