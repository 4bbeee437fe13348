"""``metaharness doctor b10x``: resolve ``b10x-harness`` as the spawn does, probe its version and
check its ``run`` flags (docs/adapters/common.md#doctor)."""

from __future__ import annotations

import sys

from returns.result import Failure

from metaharness.pure.b10x.doctor import doctor_report
from metaharness.pure.b10x.launch import child_path, resolve_b10x_program, version_token
from metaharness.pure.b10x.vendor import PROGRAM
from metaharness.pure.budgets import PROBE_S
from metaharness.pure.refusal import Refusal
from metaharness.shell.b10x.own_loop import own_loop_version
from metaharness.shell.facts import caller_environment, gather_program_candidates, probe_stdout
from metaharness.shell.refusals import refuse


def doctor_b10x() -> int:
    """Print the doctor lines for ``b10x-harness``; 0 on the pin without a fault, 1 off pin or with a fault, 2 when it cannot be found or run."""
    caller_env = caller_environment()
    path = child_path(caller_env)
    program = resolve_b10x_program(caller_env, gather_program_candidates(PROGRAM, path))
    if isinstance(program, Failure):
        return refuse(program.failure())
    resolved = program.unwrap()
    env = {"PATH": path}
    banner = probe_stdout([resolved, "--version"], env, timeout_s=PROBE_S)
    version = version_token(banner) if banner is not None else None
    if version is None:
        return refuse(Refusal("version-unreadable", f"{resolved} --version gave no version"))
    help_text = probe_stdout([resolved, "run", "--help"], env, timeout_s=PROBE_S) or ""
    report = doctor_report(resolved, version, help_text, own_loop_version(resolved))
    sys.stdout.write("".join(line + "\n" for line in report.lines))
    sys.stdout.flush()
    return report.exit_code
