"""``metaharness doctor <KIND>``: the binary the spawn would run, its pin and its flags (spec 10 §7), and
the confinement a run would apply (docs/confinement.md)."""

from __future__ import annotations

import sys

from returns.result import Failure

from metaharness.pure.b10x.launch import PROGRAM as B10X_PROGRAM
from metaharness.pure.environment import path_floor
from metaharness.pure.refusal import Refusal
from metaharness.shell.facts import caller_environment, gather_program_candidates, probe_stdout
from metaharness.shell.refusals import refuse

PROBE_S = 10


def run_doctor(kind: str) -> int:
    """Resolve, probe and flag-check ``kind``'s binary, then print the confinement a run would apply;
    the exit of spec 10 §7."""
    code = _binary_doctor(kind)
    if code != 2:
        from metaharness.shell.confinement import doctor_lines

        caller_env = caller_environment()
        name = B10X_PROGRAM if kind == "b10x" else kind
        found = [path for path, fact in gather_program_candidates(name, path_floor(caller_env)).items() if fact.regular]
        if found:
            sys.stdout.write("".join(line + "\n" for line in doctor_lines(kind, found[0], caller_env)))
            sys.stdout.flush()
    return code


def _binary_doctor(kind: str) -> int:
    """The binary's part of ``doctor``: resolve, probe, flag-check."""
    if kind == "claude":
        from metaharness.shell.claude.doctor import run_claude_doctor

        return run_claude_doctor()
    if kind == "codex":
        from metaharness.shell.codex.doctor import doctor_codex

        return doctor_codex()
    from metaharness.pure.b10x.doctor import doctor_report
    from metaharness.pure.b10x.launch import PROGRAM, child_path, resolve_b10x_program, version_token

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
    report = doctor_report(resolved, version, probe_stdout([resolved, "run", "--help"], env, timeout_s=PROBE_S) or "")
    sys.stdout.write("".join(line + "\n" for line in report.lines))
    sys.stdout.flush()
    return report.exit_code
