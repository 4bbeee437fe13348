"""``metaharness doctor claude`` (docs/adapters/common.md#pins, docs/adapters/common.md#doctor): resolve ``claude`` on
the child's PATH as the spawn does, probe ``--version`` and ``--help`` in the constructed environment with a scratch
config home, and check ``--max-turns`` by acceptance."""

from __future__ import annotations

import sys
import tempfile

from returns.result import Failure

from metaharness.pure.budgets import PROBE_S
from metaharness.pure.claude.doctor import HIDDEN_FLAGS, acceptance_probe, accepted, doctor_report, version_token
from metaharness.pure.claude.vendor import PROGRAM
from metaharness.pure.environment import path_floor, resolve_program
from metaharness.pure.refusal import Refusal
from metaharness.shell.facts import caller_environment, gather_program_candidates, run_probe
from metaharness.shell.refusals import refuse


def run_claude_doctor() -> int:
    """Resolve, probe and flag-check ``claude``; exit 0 on pin without a fault, 1 off pin or a fault,
    2 ``program-not-found`` or ``version-unreadable``."""
    caller_env = caller_environment()
    path = path_floor(caller_env)
    program = resolve_program(PROGRAM, path, gather_program_candidates(PROGRAM, path))
    if isinstance(program, Failure):
        return refuse(program.failure())
    resolved = program.unwrap()
    with tempfile.TemporaryDirectory(prefix="metaharness-doctor-") as home:
        env = {"PATH": path, "CLAUDE_CONFIG_DIR": home, "TMPDIR": home}
        env.update((key, caller_env[key]) for key in ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TZ")
                   if key in caller_env)  # fmt: skip
        banner = run_probe((resolved, "--version"), env, timeout_s=PROBE_S, cwd=home)
        version = version_token(banner.stdout.decode("utf-8", "replace")) if banner is not None else None
        if version is None:
            return refuse(Refusal("version-unreadable", f"{resolved} --version gave no version"))
        shown = run_probe((resolved, "--help"), env, timeout_s=PROBE_S, cwd=home)
        hidden = {}
        for flag in HIDDEN_FLAGS:
            probe = run_probe(acceptance_probe(resolved, flag), env, timeout_s=PROBE_S, cwd=home)
            hidden[flag] = probe is not None and accepted(flag, probe.stderr.decode("utf-8", "replace"))
    report = doctor_report(resolved, version, shown.stdout.decode("utf-8", "replace") if shown else "", hidden)
    sys.stdout.write("".join(line + "\n" for line in report.lines))
    sys.stdout.flush()
    return report.exit_code
