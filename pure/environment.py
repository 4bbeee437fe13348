"""The child's environment, its credential posture and its guards (docs/hermetic.md#environment-floor, #credentials,
docs/adapters/b10x.md#environment, #program-and-version).

Every kind's environment is built from empty out of the declared run facts, the caller's environment
map and the scratch root; nothing is inherited except as docs/hermetic.md#environment-floor lists. Stage-5 credential
checks (docs/hermetic.md#refusal-order) and the plan-stage guards (``denied-environment``, ``program-not-found``)
are values.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.adapter import Variables
from metaharness.pure.adapters import adapter_of
from metaharness.pure.kind import KINDS, Kind
from metaharness.pure.modes import Credentials
from metaharness.pure.refusal import Refusal

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
CALLER_VARIABLES = ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TZ")
TOOLCHAIN_VARIABLES = ("RUSTUP_HOME", "CARGO_HOME")
SECRET_STORE_VARIABLES = ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")


class EnvironmentDeclaration(msgspec.Struct, frozen=True):
    """The run facts the environment is built from (docs/hermetic.md#environment-floor, #credentials).

    ``credentials`` is the ``--credentials`` value (on b10x ``operator-login`` reads as ``none``).
    ``model_endpoint`` is ``--model-endpoint`` (claude/codex: the endpoint route under ``none``).
    ``loopback_port`` and ``loopback_placeholder`` are the per-run loopback facts (the port may still
    be symbolic, five characters, at plan time). ``subscription_token_file`` must already be absolute.
    """

    kind: Kind
    credentials: Credentials = "operator-login"
    api_key_secret: str | None = None
    subscription_token_file: str | None = None
    subscription_token_env: str | None = None
    subscription_token_pointer: str | None = None
    toolchain: str | None = None
    actor: str | None = None
    model_endpoint: str | None = None
    loopback_port: str | None = None
    loopback_placeholder: str | None = None


class CredentialPosture(msgspec.Struct, frozen=True):
    """What the declared credential puts in the child (docs/hermetic.md#credentials).

    ``variables`` are added to the child's environment; ``credential_file`` is the caller's file to copy
    into the scratch home before every spawn (operator-login on claude/codex), else ``None``;
    ``loop_arguments`` are the b10x loop's credential flags (docs/adapters/b10x.md#argv row 10); ``h4_how`` and
    ``h6_how`` are the attestation wording of rows H4 and H6; ``loopback`` says the child holds a per-run
    placeholder that the loopback proxy swaps for the custody token (``--credentials loopback``).
    """

    variables: Variables
    credential_file: str | None
    loop_arguments: tuple[str, ...]
    h4_how: str
    h6_how: str
    loopback: bool = False


class ChildEnvironment(msgspec.Struct, frozen=True):
    """The child's environment, sorted by key, and the credential posture that shaped it."""

    variables: Variables
    posture: CredentialPosture

    def as_dict(self) -> dict[str, str]:
        """The environment as the mapping a spawn takes."""
        return dict(self.variables)

    def strings(self) -> tuple[str, ...]:
        """Each ``KEY=VALUE`` string, in key order (the strings docs/hermetic.md#argument-size measures)."""
        return tuple(f"{key}={value}" for key, value in self.variables)

    def h3_how(self) -> str:
        """Row H3's attestation: the environment's sorted key list (docs/hermetic.md#attestation)."""
        return "environment constructed: " + ", ".join(key for key, _ in self.variables)


class ProgramCandidate(msgspec.Struct, frozen=True):
    """A gathered fact about ``<dir>/<name>`` on one PATH entry: a regular file (symlinks followed)
    and executable by the caller."""

    regular: bool
    executable: bool


def path_floor(caller_env: Mapping[str, str]) -> str:
    """The PATH floor: ``$HOME/.local/bin:/usr/local/bin:/usr/bin:/bin``, or the last three when the
    caller has no (or an empty) ``HOME`` (docs/hermetic.md#environment-floor)."""
    home = caller_env.get("HOME", "")
    return f"{home}/.local/bin:{SYSTEM_PATH}" if home else SYSTEM_PATH


def path_directories(path: str) -> tuple[str, ...]:
    """The PATH entries in order; an empty entry means the current directory, as POSIX reads it."""
    return tuple(entry or "." for entry in path.split(":"))


def resolve_program(
    name: str, path: str, facts: Mapping[str, ProgramCandidate]
) -> Result[str, Refusal]:
    """The first ``<dir>/<name>`` in PATH order that is an executable regular file, joined and not
    resolved, so the launch names the file the spawn executes (docs/hermetic.md#environment-floor,
    docs/adapters/b10x.md#program-and-version).

    A name containing ``/`` is its own candidate. ``facts`` maps each candidate path to what the
    shell found; a candidate missing from it does not exist. Not found → ``program-not-found``.
    """
    for candidate in program_candidates(name, path):
        fact = facts.get(candidate)
        if fact is not None and fact.regular and fact.executable:
            return Success(candidate)
    where = f"at {name}" if "/" in name else f"on the PATH {path}"
    return Failure(Refusal("program-not-found", f"{name} is not an executable regular file {where}"))


def program_candidates(name: str, path: str) -> tuple[str, ...]:
    """The paths the shell gathers facts for when resolving ``name`` on ``path``."""
    return (name,) if "/" in name else tuple(posixpath.join(d, name) for d in path_directories(path))


def operator_login_file(kind: Kind, caller_env: Mapping[str, str]) -> str | None:
    """The caller's credential file under operator-login (the kind's adapter names it: claude
    ``.credentials.json`` in ``$CLAUDE_CONFIG_DIR`` else ``~/.claude``; codex ``~/.codex/auth.json``);
    ``None`` when the caller's environment cannot name it, and always on b10x (docs/hermetic.md#credentials)."""
    return adapter_of(kind).credentials.operator_login_file(caller_env)


def loopback_custody_token(kind: Kind, custody: bytes) -> Result[str, Refusal]:
    """The real token in a loopback custody file, parsed once at stage 5 (docs/adapters/common.md#endpoint-route).

    claude: ``claudeAiOauth.accessToken``; codex: ``OPENAI_API_KEY`` (class api-key), else
    ``tokens.access_token`` (class chatgpt → ``loopback-chatgpt-login``); the key wins when both
    exist. Unparseable or without the token → ``loopback-custody-unreadable``; a kind without ``Loopback``
    facts → ``credentials-not-carried``, as stage 3 words it.
    """
    loopback = adapter_of(kind).loopback
    return Failure(_loopback_not_carried(kind)) if loopback is None else loopback.custody_token(custody)


def _loopback_not_carried(kind: Kind) -> Refusal:
    reason = adapter_of(kind).value_not_carried("credentials", "loopback")
    return Refusal("credentials-not-carried", f"--credentials loopback is not carried on {kind}: {reason}")


def credential_posture(
    declaration: EnvironmentDeclaration,
    caller_env: Mapping[str, str],
    credential_file_present: bool,
    custody_path: str | None = None,
    upstream: str | None = None,
) -> Result[CredentialPosture, Refusal]:
    """The declared credential's posture, or its stage-5 refusal (docs/hermetic.md#credentials,
    docs/hermetic.md#refusal-order stage 5).

    ``credential_file_present`` is the shell's fact that :func:`operator_login_file` names a readable
    regular file; ``custody_path`` and ``upstream`` name the loopback custody file and upstream for
    row H6. Refusals: ``api-key-missing``, ``subscription-token-env-unset``, ``credential-file-missing``,
    ``credentials-not-carried`` (loopback on a kind without a loopback proxy, as stage 3 words it).
    """
    kind = declaration.kind
    reads_none = adapter_of(kind).credentials.operator_login_reads_none
    mode = "none" if reads_none and declaration.credentials == "operator-login" else declaration.credentials
    no_key = "no key variable is in the child's environment"
    if mode == "api-key":
        return _api_key_posture(declaration, caller_env)
    if mode == "operator-login":
        path = operator_login_file(kind, caller_env)
        if path is None or not credential_file_present:
            return Failure(credential_file_missing(kind, path))
        return Success(
            CredentialPosture(
                (), path, (), no_key, "the credential file was copied into the scratch home before the spawn"
            )
        )
    if mode == "loopback":
        return _loopback_posture(declaration, custody_path, upstream)
    return _none_posture(declaration, caller_env)


def credential_file_missing(kind: Kind, path: str | None) -> Refusal:
    """``credential-file-missing``: the operator-login file is absent (or no readable regular file), and
    what to do next, as the kind says it (``CredentialCarriage.login_advice``)."""
    named = path if path is not None else "the caller's credential file (no HOME)"
    advice = adapter_of(kind).credentials.login_advice
    return Refusal(
        "credential-file-missing", f"--credentials operator-login on {kind}: {named} is missing" + (f"; {advice}" if advice else "")
    )


def custody_missing(kind: Kind, path: str | None, reason: str) -> Refusal:
    """``loopback-custody-unreadable`` for a custody file that cannot be read, and how to create it."""
    advice = adapter_of(kind).credentials.login_advice
    return Refusal(
        "loopback-custody-unreadable",
        f"{path}: {reason}; --credentials loopback takes its token from the operator's login file"
        + (f": {advice}" if advice else ""),
    )


def _api_key_posture(
    declaration: EnvironmentDeclaration, caller_env: Mapping[str, str]
) -> Result[CredentialPosture, Refusal]:
    kind = declaration.kind
    carried = adapter_of(kind).credentials
    if carried.api_key_secret_store and declaration.api_key_secret is not None:
        name = declaration.api_key_secret
        variables = tuple((key, caller_env[key]) for key in SECRET_STORE_VARIABLES if key in caller_env)
        return Success(
            CredentialPosture(
                variables,
                None,
                ("--api-key-secret", name),
                f"the run declared a key; the loop reads key {name} from the secret store",
                f"the loop reads key {name} from the secret store; no key variable is in the child's environment",
            )
        )
    names = carried.api_key_variables
    for name in names:
        if caller_env.get(name):
            arguments = ("--api-key-env", name) if carried.api_key_flag else ()
            return Success(
                CredentialPosture(
                    ((name, caller_env[name]),),
                    None,
                    arguments,
                    f"the run declared a key: {name}",
                    f"one declared key variable: {name}",
                )
            )
    wanted = " or ".join(names)
    empty = [name for name in names if name in caller_env]
    if empty:
        return Failure(
            Refusal(
                "api-key-missing",
                f"--credentials api-key on {kind}: {' and '.join(empty)} is empty in the caller's environment",
            )
        )
    return Failure(
        Refusal("api-key-missing", f"--credentials api-key on {kind}: the caller's environment has no {wanted}")
    )


def _loopback_posture(
    declaration: EnvironmentDeclaration, custody_path: str | None, upstream: str | None
) -> Result[CredentialPosture, Refusal]:
    """A kind without a loopback proxy refuses it as stage 3 does (``credentials-not-carried``)."""
    adapter = adapter_of(declaration.kind)
    if adapter.loopback is None:
        return Failure(_loopback_not_carried(adapter.kind))
    port = declaration.loopback_port or "00000"
    placeholder = declaration.loopback_placeholder or ""
    return Success(
        CredentialPosture(
            adapter.loopback.child_variables(port, placeholder),
            None,
            (),
            "no key variable is in the child's environment; it holds a per-run placeholder",
            "the child held a per-run placeholder and no credential file; the token was read per request from "
            f"{custody_path} and attached on the way to {upstream}",
            loopback=True,
        )
    )


def _none_posture(
    declaration: EnvironmentDeclaration, caller_env: Mapping[str, str]
) -> Result[CredentialPosture, Refusal]:
    no_key = "no key variable is in the child's environment"
    carried = adapter_of(declaration.kind).credentials
    if carried.endpoint_variables is not None and declaration.model_endpoint is not None:
        variables = carried.endpoint_variables(declaration.model_endpoint)
        return Success(CredentialPosture(variables, None, (), no_key, "no credential"))
    if not carried.subscription_token:
        return Success(CredentialPosture((), None, (), no_key, "no credential"))
    pointer = (
        ("--oauth-token-pointer", declaration.subscription_token_pointer)
        if declaration.subscription_token_pointer is not None
        else ()
    )
    if declaration.subscription_token_file is not None:
        path = declaration.subscription_token_file
        return Success(
            CredentialPosture(
                (),
                None,
                ("--oauth-token-file", path, *pointer),
                no_key,
                f"the loop reads a subscription token from {path}; no credential variable is in the child's environment",
            )
        )
    if declaration.subscription_token_env is not None:
        name = declaration.subscription_token_env
        if name not in caller_env:
            return Failure(
                Refusal(
                    "subscription-token-env-unset",
                    f"--subscription-token-env {name}: the caller's environment has no {name}",
                )
            )
        return Success(
            CredentialPosture(
                ((name, caller_env[name]),),
                None,
                ("--oauth-token-env", name, *pointer),
                no_key,
                f"one declared subscription token variable: {name}",
            )
        )
    return Success(CredentialPosture((), None, (), no_key, "no credential"))


def child_environment(
    declaration: EnvironmentDeclaration,
    caller_env: Mapping[str, str],
    scratch: str,
    posture: CredentialPosture,
) -> Result[ChildEnvironment, Refusal]:
    """The child's environment, built from empty and guarded (docs/hermetic.md#environment-floor,
    docs/adapters/b10x.md#environment).

    claude/codex: PATH floor, ``HOME USER LOGNAME LANG LC_ALL TERM TZ`` each when the caller has it,
    ``TMPDIR=<scratch>/tmp``, the scratch config home, ``AEP_ACTOR`` with ``--actor``, the posture's
    variables. b10x: PATH floor, ``XDG_CONFIG_HOME=<scratch>/config``, ``RUSTUP_HOME``/``CARGO_HOME``
    with ``--toolchain``, ``AEP_ACTOR``, the posture's variables. Guarded by
    :func:`guard_environment` (``denied-environment``).
    """
    kind = declaration.kind
    floor = adapter_of(kind).floor
    built: dict[str, str] = {"PATH": path_floor(caller_env)}
    if floor.caller_variables:
        built.update((key, caller_env[key]) for key in CALLER_VARIABLES if key in caller_env)
    if floor.scratch_tmpdir:
        built["TMPDIR"] = posixpath.join(scratch, "tmp")
    config_variable, config_directory = floor.config_home
    built[config_variable] = posixpath.join(scratch, config_directory)
    if floor.toolchain_variables and declaration.toolchain is not None:
        built.update((key, caller_env[key]) for key in TOOLCHAIN_VARIABLES if key in caller_env)
    if declaration.actor is not None:
        built["AEP_ACTOR"] = declaration.actor
    for key, value in posture.variables:
        if key in built:
            return Failure(
                Refusal(
                    "denied-environment",
                    f"{key} is denied in the {kind} child's environment (row H3): the credential would replace it",
                )
            )
        built[key] = value
    environment = ChildEnvironment(tuple(sorted(built.items())), posture)
    return guard_environment(declaration, environment)


def guard_environment(
    declaration: EnvironmentDeclaration, environment: ChildEnvironment
) -> Result[ChildEnvironment, Refusal]:
    """The ``denied-environment`` guards on a built environment, naming key and row
    (docs/hermetic.md#environment-floor).

    A launch builder that adds variables calls this again on the final environment.
    """
    for key, _ in environment.variables:
        row = _denied_row(declaration, environment, key)
        if row is not None:
            return Failure(
                Refusal(
                    "denied-environment",
                    f"{key} is denied in the {declaration.kind} child's environment (row {row})",
                )
            )
    return Success(environment)


_KEY_VARIABLES = frozenset(name for kind in KINDS for name in adapter_of(kind).credentials.api_key_variables)
_HOOK_VARIABLES = frozenset(name for kind in KINDS for name in adapter_of(kind).guard.hook_variables)


def _row_of(key: str) -> str:
    if key in _HOOK_VARIABLES:
        return "H8"
    return "H4" if key in _KEY_VARIABLES else "H3"


def _denied_row(declaration: EnvironmentDeclaration, environment: ChildEnvironment, key: str) -> str | None:
    """The row a key violates, or ``None`` when the kind's guard admits it.

    The H8 names are the vendor CLIs' guards; a b10x child admits exactly its declared keys, so a
    subscription token variable forwarded under one of those names is admitted there
    (docs/hermetic.md#environment-floor).
    """
    guard = adapter_of(declaration.kind).guard
    if guard.declared_keys_only:
        return None if key in _declared_keys(declaration) else _row_of(key)
    if key in _HOOK_VARIABLES:
        return "H8"
    posture_keys = frozenset(name for name, _ in environment.posture.variables)
    exempt = guard.exempt | (posture_keys & guard.exempt_from_posture)
    denied = key.startswith(guard.denied_prefixes) or key in guard.denied_names
    denied = denied or key == "SSH_AUTH_SOCK" or key.upper().endswith("_PROXY")
    return _row_of(key) if denied and key not in exempt else None


def _declared_keys(declaration: EnvironmentDeclaration) -> frozenset[str]:
    """Exactly the keys a declared-keys-only child holds (docs/hermetic.md#environment-floor)."""
    adapter = adapter_of(declaration.kind)
    allowed = {"PATH", adapter.floor.config_home[0], *(("TMPDIR",) if adapter.floor.scratch_tmpdir else ())}
    if declaration.actor is not None:
        allowed.add("AEP_ACTOR")
    if declaration.toolchain is not None:
        allowed.update(TOOLCHAIN_VARIABLES)
    if declaration.credentials == "api-key":
        allowed.update(SECRET_STORE_VARIABLES if declaration.api_key_secret is not None else adapter.credentials.api_key_variables)
    elif declaration.subscription_token_env is not None and declaration.subscription_token_file is None:
        allowed.add(declaration.subscription_token_env)
    return frozenset(allowed)
