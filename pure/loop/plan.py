"""Validating ``b10x-harness run`` flags into a run plan (docs/loop.md#run-flags); every refusal is a reason text."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.loop.approval import CEILINGS, MODES
from metaharness.pure.loop.paths import ScopeRule, parse_scope_rule

WIRES = ("openai-responses", "anthropic-messages")
NOT_BUILT = (
    "--toolchain",
    "--toolchain-spec",
    "--driver",
    "--substrate",
    "--substrate-embedded",
    "--cgroup-root",
    "--output-schema",
    "--delegate",
)
NOT_BUILT_HEADING = "Declared but not built in this implementation:"
"""The ``run --help`` line that names the declared flags this loop refuses at start, so a caller
reading the help (metaharness's probe and ``doctor b10x``) can refuse them before the spawn."""


def not_built(flag: str) -> str:
    """The refusal of a declared flag whose part is not built (docs/loop.md#run-flags)."""
    return f"`{flag}` is declared but not built in this implementation"


class RunFlags(msgspec.Struct, frozen=True, kw_only=True):
    """The parsed ``run`` flags, as given; ``given`` names the not-built flags that appeared."""

    input: str | None
    base_url: str | None
    model: str | None
    wire: str
    workspace: str
    json: bool
    quiet: bool
    execution_path: str
    context: tuple[str, ...]
    no_project_instructions: bool
    approve: str
    approve_up_to: str
    yes: bool
    allow_program: tuple[str, ...]
    write_scope: tuple[str, ...]
    scope_announce: str
    api_key_file: str | None
    api_key_env: str | None
    api_key_secret: str | None
    oauth_token_file: str | None
    oauth_token_env: str | None
    oauth_token_pointer: str | None
    temperature: float | None
    top_p: float | None
    reasoning_effort: str | None
    max_output_tokens_per_turn: int | None
    max_turns: int | None
    max_output_tokens: int | None
    max_duration_ms: int | None
    prices: str | None
    max_cost_microunits: int | None
    no_session: bool
    session_dir: str | None
    resume: str | None
    skills_dir: tuple[str, ...] = ()
    agents_dir: tuple[str, ...] = ()
    plugin_dir: tuple[str, ...] = ()
    hooks: str | None = None
    given_not_built: tuple[str, ...]


Origin = Literal["file", "environment", "secret-store"]


class CredentialChoice(msgspec.Struct, frozen=True):
    """The one credential source: ``kind`` is ``api-key`` or ``oauth``; ``origin`` is ``file``, ``environment``
    or (API keys only) ``secret-store``, the freedesktop Secret Service item ``name`` names
    (docs/loop.md#credentials)."""

    kind: Literal["api-key", "oauth"]
    origin: Origin
    name: str
    pointer: str | None

    @property
    def record_name(self) -> str:
        """The ``started.credential_source`` value."""
        return f"{self.kind}:{self.origin}"


class RunPlan(msgspec.Struct, frozen=True, kw_only=True):
    """A validated run: everything the shell needs besides facts it gathers itself."""

    input: str
    base_url: str
    model: str
    wire: str
    approve: str
    ceiling: str
    programs: tuple[str, ...]
    scope_rules: tuple[ScopeRule, ...]
    credential: CredentialChoice | None
    flags: RunFlags


def plan_run(flags: RunFlags) -> Result[RunPlan, str]:
    """The first refusal in flag order, else the plan (docs/loop.md#run-flags, #approvals)."""
    for flag in NOT_BUILT:
        if flag in flags.given_not_built:
            return Failure(not_built(flag))
    if flags.input is None:
        return Failure("--input is required")
    if not _is_text(flags.input):
        return Failure("--input is not UTF-8 text; pass the task as UTF-8")
    if flags.base_url is None:
        return Failure("--base-url is required")
    if flags.model is None:
        return Failure("--model is required")
    base = _base_url(flags.base_url)
    if isinstance(base, Failure):
        return base
    if not flags.model:
        return Failure("--model must not be empty")
    approve = "all" if flags.yes else flags.approve
    refused = _choice_refused(flags, approve)
    if refused is not None:
        return Failure(refused)
    rules: list[ScopeRule] = []
    for text in flags.write_scope:
        rule = parse_scope_rule(text)
        if isinstance(rule, Failure):
            return Failure(rule.failure())
        rules.append(rule.unwrap())
    if flags.scope_announce not in ("stated", "silent"):
        return Failure(f"--scope-announce must be stated or silent; got `{flags.scope_announce}`")
    credential = _credential(flags)
    if isinstance(credential, Failure):
        return credential
    bounds = _bounds(flags)
    if bounds is not None:
        return Failure(bounds)
    if flags.reasoning_effort is not None and not flags.reasoning_effort:
        return Failure("--reasoning-effort must not be empty")
    if flags.resume is not None and flags.no_session:
        return Failure("--resume conflicts with --no-session")
    return Success(
        RunPlan(
            input=flags.input,
            base_url=base.unwrap(),
            model=flags.model,
            wire=flags.wire,
            approve=approve,
            ceiling=flags.approve_up_to,
            programs=tuple(dict.fromkeys(flags.allow_program)),
            scope_rules=tuple(rules),
            credential=credential.unwrap(),
            flags=flags,
        )
    )


def _choice_refused(flags: RunFlags, approve: str) -> str | None:
    """The first of ``--wire``, ``--execution-path``, ``--approve`` (``approve``, after ``--yes``),
    ``--approve-up-to`` and ``--allow-program`` that names no choice, or a pairing they refuse."""
    if flags.wire not in WIRES:
        return f"--wire must be one of {', '.join(WIRES)}; got `{flags.wire}`"
    if flags.execution_path not in ("direct", "metaharness"):
        return f"--execution-path must be direct or metaharness; got `{flags.execution_path}`"
    if approve not in MODES:
        return f"--approve must be one of {', '.join(MODES)}; got `{flags.approve}`"
    if flags.approve_up_to not in CEILINGS:
        return f"--approve-up-to must be one of {', '.join(CEILINGS)}; got `{flags.approve_up_to}`"
    if approve == "caller" and not flags.json:
        return "--approve caller requires --json, since the answers are read as JSON lines on stdin"
    return next((f"--allow-program takes a program name without `/`; got `{program}`"
                 for program in flags.allow_program if not program or "/" in program), None)  # fmt: skip


def _is_text(value: str) -> bool:
    """Whether ``value`` is UTF-8 text: the command line hands undecodable bytes over as lone surrogates."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _base_url(url: str) -> Result[str, str]:
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError as error:
        return Failure(f"--base-url must be an http:// or https:// URL with a host and port; got `{url}` ({error})")
    if parts.scheme not in ("http", "https") or not parts.netloc or not url.startswith(f"{parts.scheme}://"):
        return Failure(f"--base-url must be an http:// or https:// URL; got `{url}`")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        return Failure(f"--base-url must not carry a query or fragment; got `{url}`")
    return Success(url.removesuffix("/"))


def _credential(flags: RunFlags) -> Result[CredentialChoice | None, str]:
    sources: list[tuple[str, Literal["api-key", "oauth"], Origin, str | None]] = [
        ("--api-key-file", "api-key", "file", flags.api_key_file),
        ("--api-key-env", "api-key", "environment", flags.api_key_env),
        ("--api-key-secret", "api-key", "secret-store", flags.api_key_secret),
        ("--oauth-token-file", "oauth", "file", flags.oauth_token_file),
        ("--oauth-token-env", "oauth", "environment", flags.oauth_token_env),
    ]
    given = [source for source in sources if source[3] is not None]
    if len(given) > 1:
        return Failure(f"the credential sources are mutually exclusive: {' and '.join(s[0] for s in given)}")
    if flags.oauth_token_pointer is not None and (not given or given[0][1] != "oauth"):
        return Failure("--oauth-token-pointer needs --oauth-token-file or --oauth-token-env")
    if not given:
        return Success(None)
    flag, kind, origin, name = given[0]
    if not name:
        return Failure(f"{flag} must not be empty")
    return Success(CredentialChoice(kind, origin, name, flags.oauth_token_pointer))


def _bounds(flags: RunFlags) -> str | None:
    positive = (
        ("--max-output-tokens-per-turn", flags.max_output_tokens_per_turn),
        ("--max-turns", flags.max_turns),
        ("--max-output-tokens", flags.max_output_tokens),
        ("--max-duration-ms", flags.max_duration_ms),
    )
    for flag, value in positive:
        if value is not None and value < 1:
            return f"{flag} must be at least 1; got {value}"
    if flags.max_cost_microunits is not None and flags.max_cost_microunits < 0:
        return f"--max-cost-microunits must not be negative; got {flags.max_cost_microunits}"
    return None
