"""``metaharness doctor <KIND>``: the binary the spawn would run, its pin and its flags
(docs/adapters/common.md#doctor), and the confinement a run would apply (docs/confinement.md)."""

from __future__ import annotations

import sys

from metaharness.pure.adapters import adapter_of
from metaharness.pure.environment import path_floor
from metaharness.pure.kind import Kind
from metaharness.shell.adapters import live_adapter_of
from metaharness.shell.confinement import doctor_lines
from metaharness.shell.facts import caller_environment, gather_program_candidates


def run_doctor(kind: Kind) -> int:
    """Resolve, probe and flag-check ``kind``'s binary, then print the confinement a run would apply;
    the exit of docs/adapters/common.md#doctor."""
    code = live_adapter_of(kind).doctor()
    if code != 2:
        caller_env = caller_environment()
        name = adapter_of(kind).program
        found = [path for path, fact in gather_program_candidates(name, path_floor(caller_env)).items() if fact.regular]
        if found:
            sys.stdout.write("".join(line + "\n" for line in doctor_lines(kind, found[0], caller_env)))
            sys.stdout.flush()
    return code
