"""``metaharness doctor codex``: resolve ``codex`` as the spawn does, probe it in the constructed
environment with a scratch config home, check its exec flags (docs/adapters/common.md#pins,
docs/adapters/common.md#doctor)."""

from __future__ import annotations

import os
import sys
import tempfile

from returns.result import Failure

from metaharness.pure.budgets import SLOW_PROBE_S
from metaharness.pure.codex.doctor import codex_doctor_report, version_token
from metaharness.pure.codex.vendor import PROGRAM
from metaharness.pure.environment import CALLER_VARIABLES, path_floor, resolve_program
from metaharness.pure.refusal import Refusal
from metaharness.shell.facts import caller_environment, gather_program_candidates, probe_stdout
from metaharness.shell.refusals import refuse


def doctor_codex() -> int:
    """Print the doctor lines for ``codex``; exit 0 on the pin without a fault, 1 off pin or with a
    fault, 2 when the program cannot be found or run."""
    caller_env = caller_environment()
    path = path_floor(caller_env)
    program = resolve_program(PROGRAM, path, gather_program_candidates(PROGRAM, path))
    if isinstance(program, Failure):
        return refuse(program.failure())
    resolved = program.unwrap()
    with tempfile.TemporaryDirectory(prefix="metaharness-doctor-") as scratch:
        os.mkdir(os.path.join(scratch, "codex-home"), 0o700)
        env = {key: caller_env[key] for key in CALLER_VARIABLES if key in caller_env}
        env.update(PATH=path, TMPDIR=scratch, CODEX_HOME=os.path.join(scratch, "codex-home"))
        banner = probe_stdout([resolved, "--version"], env, timeout_s=SLOW_PROBE_S)
        version = version_token(banner) if banner is not None else None
        if version is None:
            return refuse(Refusal("version-unreadable", f"{resolved} --version gave no version"))
        exec_help = probe_stdout([resolved, "exec", "--help"], env, timeout_s=SLOW_PROBE_S) or ""
        app_server_help = probe_stdout([resolved, "app-server", "--help"], env, timeout_s=SLOW_PROBE_S) or ""
        report = codex_doctor_report(resolved, version, exec_help, app_server_help)
    sys.stdout.write("".join(line + "\n" for line in report.lines))
    sys.stdout.flush()
    return report.exit_code
