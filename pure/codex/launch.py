"""Planning a codex launch: scratch layout, ``config.toml``, the user turn, argv and environment
(docs/adapters/common.md#vendor-launch-order; docs/adapters/codex.md; docs/adapters/common.md#endpoint-route;
docs/hermetic.md#environment-floor, #credentials, #context-files; docs/hermetic.md#execution-context-block).

Planning is a pure function of the run spec, the caller's environment, the scratch root and the
gathered PATH facts; the shell writes the files, copies ``auth.json``, starts any proxy and spawns.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Literal

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.budgets import HOOK_TIMEOUT_S
from metaharness.pure.catalogue import Catalogue, scratch_copy
from metaharness.pure.codex.skills import skill_ambient, skills_h2_why
from metaharness.pure.codex.vendor import KIND, LOOPBACK_KEY_VARIABLE, PROGRAM
from metaharness.pure.context import (
    ContextFileRead,
    check_argument_sizes,
    context_record,
)
from metaharness.pure.environment import (
    ChildEnvironment,
    EnvironmentDeclaration,
    ProgramCandidate,
    child_environment,
    path_floor,
    resolve_program,
)
from metaharness.pure.events import ContextFile, Hermetic
from metaharness.pure.hermetic import (
    MemoryWalk,
    RowAttestation,
    attest,
    launch_facts,
)
from metaharness.pure.hook_channel import (
    CHANNEL_DIR,
    HOOK_PROGRAM,
    REQUESTS_DIR,
    RESPONSES_DIR,
    render_hook_program,
    shell_quote,
)
from metaharness.pure.jsonline import sha256_hex
from metaharness.pure.refusal import Refusal
from metaharness.pure.scratch import ScratchFile
from metaharness.pure.vendor_launch import (
    Custody,
    denied_flag,
    scratch_directories,
    vendor_basis,
    vendor_user_turn,
)

CONTEXT_CHANNEL = "user-turn"
ENDPOINT_PROVIDER = "metaharness_endpoint"
LOOPBACK_PROVIDER = "metaharness_loopback"
NO_MODEL_PROVIDER = "metaharness_none"
NO_MODEL_BASE_URL = "metaharness-none://no-model-endpoint/v1"
"""``--credentials none`` without an endpoint: a base URL no request can be built for, so the first request fails
at once (docs/adapters/codex.md#configtoml)."""

DecisionMode = Literal["frame", "ask", "observe"]
HermeticMode = Literal["off", "on", "strict"]

DENIED_ARGUMENTS = (
    "--ephemeral",
    "--ignore-user-config",
    "--dangerously-bypass-approvals-and-sandbox",
    "--add-dir",
    "--approve-for-me",
    "-s",
    "--sandbox",
    "-p",
    "--profile",
    "--oss",
    "-c",
    "--config",
)
"""Flags a codex launch must never carry (docs/adapters/codex.md#refusals: each drops the hook, widens the
sandbox or overrides the scratch config)."""




class CodexRunSpec(msgspec.Struct, frozen=True, kw_only=True):
    """The run options a codex launch is built from (docs/cli.md#run, docs/adapters/codex.md).

    ``cwd`` is ``--cwd`` already made absolute (``None`` → ``<scratch>/work``); ``context`` holds the
    admitted ``--context`` files (docs/hermetic.md#context-files, #context-refusals), rendered into the user turn;
    ``environment`` carries credentials, actor, endpoint and the loopback port and placeholder (the port may still be
    symbolic at plan time, docs/hermetic.md#refusal-order stage 8); ``catalogue`` is the checked catalogue of a
    catalogue run, whose scratch copy H10 names by digest.
    """

    prompt: str
    decisions: DecisionMode = "frame"
    hermetic: HermeticMode = "off"
    model: str | None = None
    effort: str | None = None
    cwd: str | None = None
    scratch_cwd: bool = False
    environment: EnvironmentDeclaration = EnvironmentDeclaration(kind="codex")
    context: tuple[ContextFileRead, ...] = ()
    frame_digest: str | None = None
    catalogue: Catalogue | None = None
    hook_timeout_s: int = HOOK_TIMEOUT_S
    """The hook's ``timeout``, whole seconds: the vendor's budget for one decision (``--decision-deadline`` + 5 s)."""


class ProviderBlock(msgspec.Struct, frozen=True):
    """The one ``[model_providers.<name>]`` table (docs/adapters/codex.md; docs/adapters/common.md#endpoint-route);
    ``env_key`` only on loopback."""

    name: str
    base_url: str
    env_key: str | None
    retries: bool = True
    """False renders ``request_max_retries = 0`` and ``stream_max_retries = 0``: the first failure ends the turn."""


class CodexConfig(msgspec.Struct, frozen=True, kw_only=True):
    """What the scratch ``config.toml`` says (docs/adapters/codex.md); rendered by :func:`render_config`."""

    approval_policy: str
    sandbox_mode: Literal["read-only", "workspace-write"]
    effort: str | None
    provider: ProviderBlock | None
    hook_commands: tuple[str, ...]
    hook_timeout: int
    view_image: bool = True
    """False on a catalogue run: the app-server never runs the hook, so ``view_image``, which reads
    any local image, is switched off there (``[features] view_image = false``; docs/vendor-facts.md)."""


class CodexLaunch(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the shell needs to start ``codex exec``: ``program`` then ``args``, the constructed
    environment, the working directory, the scratch tree, where the rollout appears and where the
    caller's ``auth.json`` is copied from (operator-login)."""

    program: str
    args: tuple[str, ...]
    environment: ChildEnvironment
    cwd: str
    scratch: str
    codex_home: str
    directories: tuple[str, ...]
    files: tuple[ScratchFile, ...]
    config: CodexConfig
    user_turn: str
    context_files: tuple[ContextFile, ...]
    credential_file: str | None
    hermetic: Hermetic
    sessions_dir: str
    rollout_copy: str
    stdout_copy: str

    @property
    def argv(self) -> tuple[str, ...]:
        return (self.program, *self.args)


def provider_block(declaration: EnvironmentDeclaration) -> ProviderBlock | None:
    """The provider table of docs/adapters/common.md#endpoint-route: the endpoint route under ``none`` with an endpoint
    (no ``env_key``, so no auth header), the loopback proxy under ``loopback``, under ``none`` without an endpoint
    the provider no request can be sent to, without retries, so the run fails at its first request
    (docs/adapters/codex.md#configtoml); else none."""
    if declaration.credentials == "loopback":
        port = declaration.loopback_port or "00000"
        return ProviderBlock(LOOPBACK_PROVIDER, f"http://127.0.0.1:{port}/v1", LOOPBACK_KEY_VARIABLE)
    if declaration.credentials == "none" and declaration.model_endpoint is not None:
        return ProviderBlock(ENDPOINT_PROVIDER, declaration.model_endpoint.rstrip("/") + "/v1", None)
    if declaration.credentials == "none":
        return ProviderBlock(NO_MODEL_PROVIDER, NO_MODEL_BASE_URL, None, retries=False)
    return None


def _toml_string(text: str) -> str:
    """A TOML basic string with ``\\`` and ``"`` escaped (docs/adapters/codex.md), control characters as ``\\u``
    and four hex digits."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(c if c >= " " and c != "\x7f" else f"\\u{ord(c):04x}" for c in escaped)
    return f'"{escaped}"'


def render_config(config: CodexConfig) -> str:
    """``config.toml`` by hand: top-level keys before any table (docs/adapters/codex.md)."""
    lines = [
        f"approval_policy = {_toml_string(config.approval_policy)}",
        f"sandbox_mode = {_toml_string(config.sandbox_mode)}",
    ]
    if config.effort is not None:
        lines.append(f"model_reasoning_effort = {_toml_string(config.effort)}")
    if config.provider is not None:
        lines.append(f"model_provider = {_toml_string(config.provider.name)}")
        lines += [
            "",
            f"[model_providers.{config.provider.name}]",
            f"name = {_toml_string(config.provider.name)}",
        ]
        lines.append(f"base_url = {_toml_string(config.provider.base_url)}")
        lines.append('wire_api = "responses"')
        if config.provider.env_key is not None:
            lines.append(f"env_key = {_toml_string(config.provider.env_key)}")
        if not config.provider.retries:
            lines += ["request_max_retries = 0", "stream_max_retries = 0"]
    if not config.view_image:
        lines += ["", "[features]", "view_image = false"]
    if config.sandbox_mode == "workspace-write":
        lines += ["", "[sandbox_workspace_write]", "exclude_slash_tmp = true"]
    lines += ["", "[mcp_servers]", "", "[[hooks.PreToolUse]]"]
    for command in config.hook_commands:
        lines += [
            "",
            "[[hooks.PreToolUse.hooks]]",
            'type = "command"',
            f"command = {_toml_string(command)}",
        ]
        lines.append(f"timeout = {config.hook_timeout}")
    return "\n".join(lines) + "\n"


def check_shadowing(config: CodexConfig, hook_command: str) -> Result[CodexConfig, Refusal]:
    """``shadowed`` (docs/adapters/common.md#one-event-per-call): ``approval_policy`` other than ``never``, or a
    ``PreToolUse`` group other than the one metaharness hook, would let another layer decide."""
    if config.approval_policy != "never":
        return Failure(
            Refusal(
                "shadowed",
                f'approval_policy = "{config.approval_policy}" in the codex config.toml would let codex '
                "ask or refuse before the metaharness hook decides",
            )
        )
    if config.hook_commands != (hook_command,):
        return Failure(
            Refusal(
                "shadowed",
                "hooks.PreToolUse in the codex config.toml holds something other than the one metaharness hook",
            )
        )
    return Success(config)


def check_arguments(args: tuple[str, ...]) -> Result[tuple[str, ...], Refusal]:
    """``denied-argument`` on the built argv, each flag position before ``--`` compared by the part
    before ``=`` (docs/adapters/codex.md#refusals)."""
    values_of = {"--model", "--color"}
    flag = denied_flag(args, DENIED_ARGUMENTS, values_of, until="--")
    if flag is None:
        return Success(args)
    return Failure(
        Refusal(
            "denied-argument",
            f"{flag} is denied on codex: it would bypass the hook, widen the sandbox or override the scratch "
            "config.toml",
        )
    )


def attestation(
    spec: CodexRunSpec,
    scratch: str,
    cwd: str,
    environment: ChildEnvironment,
    memory: RowAttestation,
    walk: MemoryWalk,
    skills: tuple[str, ...] = (),
) -> Hermetic:
    """``session.started.hermetic`` for a codex launch; ``skills`` are the
    ``SKILL.md`` files found under the pinned Codex's skill roots (``metaharness.pure.codex.skills``)."""
    catalogue_sha256 = None if spec.catalogue is None else sha256_hex(scratch_copy(spec.catalogue))
    facts = launch_facts(KIND, spec, (scratch, cwd, environment), memory,
                         (spec.frame_digest, catalogue_sha256, spec.context), walk.root_names)  # fmt: skip
    return attest(
        msgspec.structs.replace(facts, extra_ambient=skill_ambient(skills), h2_unavailable=skills_h2_why(skills))
    )


def arguments(spec: CodexRunSpec, turn: str) -> tuple[str, ...]:
    """argv after argv[0] in the exact order of docs/adapters/codex.md."""
    args = [
        "exec",
        "--json",
        "--strict-config",
        "--dangerously-bypass-hook-trust",
        "--skip-git-repo-check",
    ]
    args += ["--color", "never"]
    if spec.model is not None:
        args += ["--model", spec.model]
    return (*args, "--", turn)


CODEX_HOME = "codex-home"
"""The run's ``CODEX_HOME`` under the scratch root: ``config.toml`` and the ``sessions`` codex writes."""


def plan_codex_launch(
    spec: CodexRunSpec,
    caller_env: Mapping[str, str],
    scratch: str,
    program_facts: Mapping[str, ProgramCandidate],
    credential_file_present: bool = False,
    custody_path: str | None = None,
    upstream: str | None = None,
    *,
    walk: MemoryWalk | None = None,
    skills: tuple[str, ...] = (),
) -> Result[CodexLaunch, Refusal]:
    """The codex launch, or its refusal (docs/adapters/common.md#vendor-launch-order; docs/adapters/codex.md;
    docs/hermetic.md#refusal-order stages 5, 7 and 8). ``walk`` is the memory walk the shell gathered; none means
    nothing was found; ``skills`` the ``SKILL.md`` files the shell found under the skill roots.

    Refusals in order: the stage-5 credential ones, ``memory-ancestor-found``, ``program-not-found``,
    ``denied-environment``, ``denied-argument``, ``shadowed``, ``argument-too-long``."""
    custody = Custody(credential_file_present, custody_path, upstream)
    basis = vendor_basis(KIND, spec, caller_env, scratch, custody, walk)
    if isinstance(basis, Failure):
        return basis
    settled = basis.unwrap()
    declaration, posture, cwd = settled.declaration, settled.posture, settled.cwd
    program = resolve_program(PROGRAM, path_floor(caller_env), program_facts)
    if isinstance(program, Failure):
        return program
    environment = child_environment(declaration, caller_env, scratch, posture)
    if isinstance(environment, Failure):
        return environment
    turn = vendor_user_turn(KIND, spec, spec.context)
    args = check_arguments(arguments(spec, turn))
    if isinstance(args, Failure):
        return args
    config = _config(spec, declaration, shell_quote(posixpath.join(scratch, HOOK_PROGRAM)))
    if isinstance(config, Failure):
        return config
    launch = CodexLaunch(
        program=program.unwrap(),
        args=args.unwrap(),
        environment=environment.unwrap(),
        cwd=cwd,
        scratch=scratch,
        codex_home=posixpath.join(scratch, CODEX_HOME),
        directories=_directories(spec, scratch),
        files=_scratch_files(spec, scratch, config.unwrap()),
        config=config.unwrap(),
        user_turn=turn,
        context_files=context_record(spec.context, CONTEXT_CHANNEL) or (),
        credential_file=posture.credential_file,
        hermetic=attestation(spec, scratch, cwd, environment.unwrap(), settled.memory, settled.walk, skills),
        sessions_dir=posixpath.join(scratch, CODEX_HOME, "sessions"),
        rollout_copy=posixpath.join(scratch, "rollout.jsonl"),
        stdout_copy=posixpath.join(scratch, "rollout.stdout.jsonl"),
    )
    measured = check_argument_sizes(launch.argv, launch.environment.strings(), spec.context, len(launch.argv) - 1)
    return measured.map(lambda _: launch)


def _config(spec: CodexRunSpec, declaration: EnvironmentDeclaration, hook_command: str) -> Result[CodexConfig, Refusal]:
    """The run's ``config.toml``: no approvals, the sandbox the workdir allows, the provider block, the hook
    (``hook_command``, quoted) and its timeout, ``view_image`` unless a catalogue replaces the tools; refused
    ``shadowed`` when a key would shadow another."""
    config = CodexConfig(
        approval_policy="never",
        sandbox_mode="read-only" if spec.cwd is None else "workspace-write",
        effort=spec.effort,
        provider=provider_block(declaration),
        hook_commands=(hook_command,),
        hook_timeout=spec.hook_timeout_s,
        view_image=spec.catalogue is None,
    )
    return check_shadowing(config, hook_command)


def _scratch_files(spec: CodexRunSpec, scratch: str, config: CodexConfig) -> tuple[ScratchFile, ...]:
    """The files the scratch tree holds, sorted by path: ``config.toml`` and the hook program."""
    files = (
        ScratchFile(posixpath.join(scratch, CODEX_HOME, "config.toml"), render_config(config).encode()),
        ScratchFile(posixpath.join(scratch, HOOK_PROGRAM), render_hook_program(scratch, spec.hook_timeout_s).encode(), 0o700),
    )
    return tuple(sorted(files, key=lambda f: f.path))


def _directories(spec: CodexRunSpec, scratch: str) -> tuple[str, ...]:
    """The scratch directories to create (0700), parents first (docs/adapters/codex.md#scratch-layout)."""
    return scratch_directories(scratch, spec.cwd, [CODEX_HOME, "tmp", "hooks", CHANNEL_DIR, REQUESTS_DIR, RESPONSES_DIR])
