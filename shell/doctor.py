"""``metaharness doctor <KIND> [--credentials MODE] [--model-endpoint URL]``: the binary the spawn would
run, its pin and its flags (docs/adapters/common.md#doctor), the confinement a run would apply
(docs/confinement.md), and the credential and endpoint a run with the same options would use."""

from __future__ import annotations

import sys

from returns.result import Failure

from metaharness.pure.adapters import adapter_of
from metaharness.pure.bounds import CREDENTIAL_FILE_LIMIT
from metaharness.pure.environment import (
    EnvironmentDeclaration,
    credential_posture,
    custody_missing,
    operator_login_file,
    path_floor,
)
from metaharness.pure.kind import Kind
from metaharness.pure.modes import Credentials
from metaharness.pure.options import RunOptions, check_kind_carriage
from metaharness.pure.refusal import Refusal
from metaharness.shell.adapters import live_adapter_of
from metaharness.shell.bounded_reads import read_regular
from metaharness.shell.confinement import doctor_lines
from metaharness.shell.endpoint_reach import endpoint_refusal
from metaharness.shell.facts import caller_environment, gather_program_candidates, readable_regular_file


def credential_refusal(kind: Kind, credentials: Credentials, endpoint: str | None, caller_env: dict[str, str]) -> Refusal | None:
    """The stage-5 refusal a run of ``kind`` under ``credentials`` would meet (docs/hermetic.md#credentials):
    the mode carried on the kind at all, the login file present, the key variable set, the loopback custody file
    read and holding a token."""
    carried = check_kind_carriage(RunOptions(kind=kind, credentials=credentials))
    if isinstance(carried, Failure):
        refused: Refusal = carried.failure()
        return refused
    login = operator_login_file(kind, caller_env)
    loopback = adapter_of(kind).loopback
    if credentials == "loopback" and loopback is not None:
        try:
            data = read_regular(login or "", CREDENTIAL_FILE_LIMIT)
        except OSError as error:
            return custody_missing(kind, login, str(error.strerror or error))
        token = loopback.custody_token(data)
        return token.failure() if isinstance(token, Failure) else None
    declaration = EnvironmentDeclaration(kind=kind, credentials=credentials, model_endpoint=endpoint)
    posture = credential_posture(declaration, caller_env, readable_regular_file(login))
    return posture.failure() if isinstance(posture, Failure) else None


def _check_line(what: str, refusal: Refusal | None, fine: str) -> str:
    return f"{what}: ok — {fine}" if refusal is None else f"{what}: {refusal.code}: {refusal.message}"


def run_doctor(kind: Kind, credentials: Credentials = "operator-login", endpoint: str | None = None) -> int:
    """Resolve, probe and flag-check ``kind``'s binary, print the confinement a run would apply, then the
    credential and endpoint checks; the exit of docs/adapters/common.md#doctor (1 as well when the
    credential or the endpoint would refuse the run)."""
    code = live_adapter_of(kind).doctor()
    if code == 2:
        return code
    caller_env = caller_environment()
    name = adapter_of(kind).program
    found = [path for path, fact in gather_program_candidates(name, path_floor(caller_env)).items() if fact.regular]
    lines = list(doctor_lines(kind, found[0], caller_env)) if found else []
    credential = credential_refusal(kind, credentials, endpoint, caller_env)
    lines.append(_check_line("credential", credential, f"--credentials {credentials} has what a run needs"))
    reached = endpoint_refusal(endpoint)
    if endpoint is not None:
        lines.append(_check_line("endpoint", reached, f"{endpoint} accepts a connection"))
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()
    return max(code, 1) if credential is not None or reached is not None else code
