"""``metaharness doctor gemini`` (docs/adapters/common.md#doctor): resolve ``gemini`` on the child's PATH as the
spawn does and probe ``--version`` and ``--help`` in a constructed environment with a scratch
``GEMINI_CLI_HOME``."""

from __future__ import annotations

import sys

from metaharness.pure.budgets import SLOW_PROBE_S
from metaharness.pure.gemini.adapter import PROGRAM
from metaharness.pure.gemini.doctor import doctor_report, version_token
from metaharness.pure.refusal import Refusal
from metaharness.shell.refusals import refuse
from metaharness.shell.vendor_doctor import probed_vendor


def run_gemini_doctor() -> int:
    """Resolve, probe and flag-check ``gemini``; exit 0 on pin without a fault, 1 off pin or a fault, 2
    ``program-not-found`` or ``version-unreadable``."""
    with probed_vendor(PROGRAM, "GEMINI_CLI_HOME", SLOW_PROBE_S, version_token) as probed:
        if isinstance(probed, Refusal):
            return refuse(probed)
    report = doctor_report(probed.resolved, probed.version, probed.help_text)
    sys.stdout.write("".join(line + "\n" for line in report.lines))
    sys.stdout.flush()
    return report.exit_code
