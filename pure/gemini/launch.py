"""Planning a gemini launch: scratch layout, the scratch ``settings.json``, the user turn, argv and environment
(docs/adapters/gemini.md#launch; docs/adapters/common.md#vendor-launch-order; docs/hermetic.md#environment-floor).

Planning is a pure function of the run spec, the caller's environment, the scratch root, the gathered PATH
facts and what the shell found in the work tree; the shell writes the files and spawns.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any, Literal

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.budgets import HOOK_TIMEOUT_S
from metaharness.pure.context import ContextFileRead, check_argument_sizes, context_record
from metaharness.pure.environment import (
    ChildEnvironment,
    EnvironmentDeclaration,
    ProgramCandidate,
    child_environment,
    guard_environment,
    path_floor,
    resolve_program,
)
from metaharness.pure.events import ContextFile, Hermetic
from metaharness.pure.gemini.adapter import DEFAULT_MODEL, KIND, LAYER_TMP, PROGRAM
from metaharness.pure.gemini.hook import render_gemini_hook
from metaharness.pure.hermetic import MemoryWalk, attest, launch_facts
from metaharness.pure.hook_channel import CHANNEL_DIR, HOOK_PROGRAM, REQUESTS_DIR, RESPONSES_DIR, shell_quote
from metaharness.pure.jsonline import compact
from metaharness.pure.refusal import Refusal
from metaharness.pure.scratch import ScratchFile
from metaharness.pure.vendor_launch import Custody, scratch_directories, vendor_basis, vendor_user_turn

CONTEXT_CHANNEL = "user-turn"
WORKSPACE_SETTINGS = ".gemini"
"""The work tree's own Gemini folder (settings, hooks, ``.env``, policies, skills): read as a trusted
workspace's under ``--skip-trust``, so a tree holding it is refused (``shadowed``)."""

DecisionMode = Literal["frame", "ask", "observe"]
HermeticMode = Literal["off", "on", "strict"]


class GeminiRunSpec(msgspec.Struct, frozen=True, kw_only=True):
    """The run options a gemini launch is built from (docs/cli.md#run, docs/adapters/gemini.md)."""

    prompt: str
    decisions: DecisionMode = "frame"
    hermetic: HermeticMode = "off"
    model: str | None = None
    cwd: str | None = None
    scratch_cwd: bool = False
    environment: EnvironmentDeclaration = EnvironmentDeclaration(kind=KIND)
    context: tuple[ContextFileRead, ...] = ()
    frame_digest: str | None = None
    hook_timeout_s: int | None = None
    """The hook's timeout in seconds (``None``: the shared 60 s); shorter only in tests."""


class GeminiLaunch(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the shell needs to start ``gemini -p``."""

    program: str
    args: tuple[str, ...]
    environment: ChildEnvironment
    cwd: str
    scratch: str
    gemini_home: str
    directories: tuple[str, ...]
    files: tuple[ScratchFile, ...]
    settings: dict[str, Any]
    user_turn: str
    context_files: tuple[ContextFile, ...]
    hermetic: Hermetic
    transcript: str

    @property
    def argv(self) -> tuple[str, ...]:
        return (self.program, *self.args)


def scratch_settings(hook_command: str, timeout_ms: int) -> dict[str, Any]:
    """The one settings file the child reads (``$GEMINI_CLI_HOME/.gemini/settings.json``,
    docs/adapters/gemini.md#settings): the API-key auth type, usage statistics and telemetry off, local
    ``.env`` files ignored, memory read from the work tree alone, no MCP server, hooks on with the one
    BeforeTool hook, and one attempt per model request with no retry of a failed fetch, so a dead
    endpoint ends the run at its first request (docs/adapters/gemini.md#settings)."""
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"maxAttempts": 1, "retryFetchErrors": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "advanced": {"ignoreLocalEnv": True},
        "context": {"memoryBoundaryMarkers": []},
        "mcpServers": {},
        "hooksConfig": {"enabled": True},
        "hooks": {"BeforeTool": [{"matcher": ".*", "hooks": [
            {"type": "command", "command": hook_command, "timeout": timeout_ms}]}]},
    }


def arguments(spec: GeminiRunSpec, turn: str) -> tuple[str, ...]:
    """argv after argv[0] (docs/adapters/gemini.md#launch): headless, the model named, stream-json, the
    workspace trusted for the session only and every call approved, so the hook alone decides."""
    model = spec.model if spec.model is not None else DEFAULT_MODEL
    return ("-p", turn, "--model", model, "--output-format", "stream-json", "--skip-trust", "--approval-mode", "yolo")


SYSTEM_SETTINGS_VARIABLES = ("GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "GEMINI_CLI_SYSTEM_SETTINGS_PATH")
"""The variables naming Gemini CLI's system defaults and system settings files, which merge under and over every
other layer (system settings override the scratch settings); a run points both into the scratch root, where
no file is, so a machine's ``/etc/gemini-cli/`` files never reach it."""


def with_system_paths(environment: ChildEnvironment, scratch: str) -> ChildEnvironment:
    """The environment with both system settings paths naming absent files under ``<scratch>/gemini-system``."""
    system = posixpath.join(scratch, "gemini-system")
    named = dict(zip(SYSTEM_SETTINGS_VARIABLES, (posixpath.join(system, "system-defaults.json"),
                                                 posixpath.join(system, "settings.json")), strict=True))  # fmt: skip
    return msgspec.structs.replace(environment, variables=tuple(sorted({**environment.as_dict(), **named}.items())))


def refuse_workspace_settings(cwd: str, entries: tuple[str, ...]) -> Result[None, Refusal]:
    """``shadowed`` when the work tree holds its own ``.gemini`` (``entries``: the names the shell found in
    ``cwd``): its settings could switch the governing hook off once the workspace is trusted."""
    if WORKSPACE_SETTINGS not in entries:
        return Success(None)
    return Failure(Refusal(
        "shadowed", f"{posixpath.join(cwd, WORKSPACE_SETTINGS)} holds the work tree's own Gemini CLI settings, which "
        "a trusted workspace merges over the scratch settings (hooksConfig.enabled false turns the metaharness hook "
        "off); remove it or run in a copy without it"))


def attestation(spec: GeminiRunSpec, scratch: str, cwd: str, environment: ChildEnvironment, walk: MemoryWalk,
                memory: Any) -> Hermetic:  # fmt: skip
    """``session.started.hermetic`` for a gemini launch."""
    return attest(launch_facts(KIND, spec, (scratch, cwd, environment), memory, (spec.frame_digest, None, spec.context),
                               walk.root_names))  # fmt: skip


def plan_gemini_launch(
    spec: GeminiRunSpec,
    caller_env: Mapping[str, str],
    scratch: str,
    program_facts: Mapping[str, ProgramCandidate],
    *,
    walk: MemoryWalk | None = None,
    workspace_entries: tuple[str, ...] = (),
    custody_path: str | None = None,
    upstream: str | None = None,
) -> Result[GeminiLaunch, Refusal]:
    """The gemini launch, or its refusal (docs/hermetic.md#refusal-order stages 5, 7 and 8); under loopback
    ``custody_path`` and ``upstream`` name where the proxy reads the key and where it sends it.

    Refusals in order: the stage-5 credential ones, ``memory-ancestor-found``, ``shadowed`` (the work tree's
    own ``.gemini``), ``program-not-found``, ``denied-environment``, ``argument-too-long``.
    """
    basis = vendor_basis(KIND, spec, caller_env, scratch, Custody(False, custody_path, upstream), walk)
    if isinstance(basis, Failure):
        return basis
    settled = basis.unwrap()
    declaration, posture, cwd = settled.declaration, settled.posture, settled.cwd
    shadowed = refuse_workspace_settings(cwd, workspace_entries)
    if isinstance(shadowed, Failure):
        return shadowed
    program = resolve_program(PROGRAM, path_floor(caller_env), program_facts)
    if isinstance(program, Failure):
        return program
    environment = child_environment(declaration, caller_env, scratch, posture).bind(
        lambda built: guard_environment(declaration, with_system_paths(built, scratch)))
    if isinstance(environment, Failure):
        return environment
    turn = vendor_user_turn(KIND, spec, spec.context)
    hook_path = posixpath.join(scratch, HOOK_PROGRAM)
    timeout_s = HOOK_TIMEOUT_S if spec.hook_timeout_s is None else spec.hook_timeout_s
    settings = scratch_settings(shell_quote(hook_path), timeout_s * 1000)
    gemini_home = posixpath.join(scratch, "gemini-home")
    hook_text = render_gemini_hook(scratch, timeout_s)
    files = (
        ScratchFile(posixpath.join(gemini_home, ".gemini", "settings.json"), compact(settings) + b"\n"),
        ScratchFile(hook_path, hook_text.encode(), 0o700),
    )
    launch = GeminiLaunch(
        program=program.unwrap(), args=arguments(spec, turn), environment=environment.unwrap(), cwd=cwd,
        scratch=scratch, gemini_home=gemini_home, directories=_directories(spec, scratch),
        files=tuple(sorted(files, key=lambda f: f.path)), settings=settings, user_turn=turn,
        context_files=context_record(spec.context, CONTEXT_CHANNEL) or (),
        hermetic=attestation(spec, scratch, cwd, environment.unwrap(), settled.walk, settled.memory),
        transcript=posixpath.join(scratch, "stream.jsonl"),
    )  # fmt: skip
    measured = check_argument_sizes(launch.argv, launch.environment.strings(), spec.context, 2)
    return measured.map(lambda _: launch)


def _directories(spec: GeminiRunSpec, scratch: str) -> tuple[str, ...]:
    """The scratch directories to create (0700), parents first (docs/adapters/gemini.md#scratch-layout)."""
    names = ["gemini-home", "gemini-home/.gemini", "tmp", LAYER_TMP, "hooks", CHANNEL_DIR, REQUESTS_DIR, RESPONSES_DIR]
    return scratch_directories(scratch, spec.cwd, names)
