"""Planning a Claude Code launch: scratch layout, settings document (no hook: calls are decided in-band,
docs/adapters/claude.md#in-band-decisions), the exact argv, the constructed environment and its guards, the memory rule and the attestation
(docs/adapters/common.md#vendor-launch-order, #vendor-decisions; docs/adapters/claude.md; docs/hermetic.md#attestation;
docs/adapters/common.md#endpoint-route; docs/hermetic.md#attestation, #memory-file-walk, #environment-floor,
#credentials, #context-files; docs/hermetic.md#execution-context-block).

Planning is a pure function of the run spec, the caller's environment, the scratch root and gathered
facts (PATH candidates, memory-walk hits, the managed-settings file). Writing the scratch tree,
copying the credential file, starting a loopback proxy and spawning happen around it in the shell.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Literal

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.catalogue import Catalogue, needs_writable, scratch_copy
from metaharness.pure.claude.plugins import PluginCopy
from metaharness.pure.claude.vendor import KIND, PINS, PROGRAM
from metaharness.pure.context import ContextFileRead, check_argument_sizes, context_record, render_context_block
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
from metaharness.pure.jsonline import compact, sha256_hex
from metaharness.pure.refusal import Refusal
from metaharness.pure.scratch import ScratchFile
from metaharness.pure.vendor_launch import (
    Custody,
    denied_flag,
    scratch_directories,
    vendor_basis,
    vendor_user_turn,
)

CONTEXT_CHANNEL = "append-system-prompt"
SETTINGS_SCHEMA = "https://json.schemastore.org/claude-code-settings.json"
SETTINGS_FILE = "claude-settings.json"
MCP_CONFIG_FILE = "mcp-config.json"
CATALOGUE_FILE = "catalogue.json"
MCP_SERVER = "metaharness"
TRANSCRIPT_FILE = "transcript.jsonl"
MANAGED_SETTINGS = "/etc/claude-code/managed-settings.json"
"""The vendor's system path for managed settings, read whatever the sources (docs/adapters/claude.md)."""

BUILTIN_PLUGINS = ("cc-plugin-agents-md", "cc-plugin-privacy", "cc-plugin-plugin-authoring")
"""The ``@builtin`` plugins a fresh home reports at 2.1.332 (docs/adapters/claude.md#plugins)."""

DENIED_ARGUMENTS = (
    "--bare",
    "--safe-mode",
    "--dangerously-skip-permissions",
    "--add-dir",
    "--allow-dangerously-skip-permissions",
    "--permission-mode",
    "--permission-prompt-tool",
    "--allowedTools",
    "--allowed-tools",
    "--disallowedTools",
    "--resume",
    "--continue",
)
"""Flags a claude launch must never carry (docs/adapters/claude.md#refusals): each drops the hooks, changes what
an abstain means or shadows the in-band callback."""

CANARY_LOADED: Mapping[str, frozenset[str]] = {PINS[0]: frozenset()}
"""Per pin, the memory shapes the canary showed loaded (docs/hermetic.md#claudes-memory-canary); a version without an
entry counts every shape as loaded. At 2.1.332, driven against the emulator with ``--setting-sources ""``
and a fresh config home, no shape above the cwd and not ``$HOME/.claude/CLAUDE.md`` reached a request
body, while without ``--setting-sources ""`` the project shapes did (``tests/test_claude_canary.py``
re-drives both)."""

STDIN_REACHABLE = (
    "Claude Code's stdin, where metaharness answers its calls, can be written by any tool that can see the CLI's "
    "process (/proc/<pid>/fd/0): a forged line is detected (INPUT_FORGED, DECISION_BYPASSED), not prevented"
)
"""The ambient input of the in-band seam (docs/adapters/claude.md#in-band-decisions)."""

DecisionMode = Literal["frame", "ask", "observe"]
HermeticMode = Literal["off", "on", "strict"]


class ClaudeRunSpec(msgspec.Struct, frozen=True, kw_only=True):
    """The run options a claude launch is built from (docs/cli.md#run, docs/adapters/claude.md).

    ``cwd`` is ``--cwd`` already made absolute (``None`` → ``<scratch>/work``); ``context`` the
    admitted ``--context`` files (rendered into ``--append-system-prompt``); ``plugins`` the
    planned ``--plugin-dir`` copies (``metaharness.pure.claude.plugins``); ``environment`` carries credentials, actor,
    endpoint and the loopback port and placeholder (the port may still be symbolic, docs/hermetic.md#refusal-order
    stage 8); ``frame_digest`` the sealed frame's digest (row H10); ``catalogue`` the checked
    catalogue of a ``--tool-surface owned --catalogue`` run and ``own_cli`` the argv the shell gathered
    that starts this build's own CLI, interpreter first, which serves it (docs/adapters/claude.md "Owned surface and
    --catalogue").
    """

    prompt: str
    decisions: DecisionMode = "frame"
    hermetic: HermeticMode = "off"
    model: str | None = None
    effort: str | None = None
    max_turns: int | None = None
    cwd: str | None = None
    scratch_cwd: bool = False
    environment: EnvironmentDeclaration = EnvironmentDeclaration(kind="claude")
    context: tuple[ContextFileRead, ...] = ()
    plugins: tuple[PluginCopy, ...] = ()
    frame_digest: str | None = None
    catalogue: Catalogue | None = None
    own_cli: tuple[str, ...] = ()


class ClaudeLaunch(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the shell needs to start ``claude -p``: ``program`` then ``args``, the constructed
    environment, the working directory, the scratch tree (directories, files), the settings document, the
    user turn (sent on stdin once ``initialize`` is confirmed), the attestation, the plan-time warnings and where the caller's
    ``.credentials.json`` is copied from (operator-login)."""

    program: str
    args: tuple[str, ...]
    environment: ChildEnvironment
    cwd: str
    scratch: str
    claude_home: str
    directories: tuple[str, ...]
    files: tuple[ScratchFile, ...]
    settings: bytes
    user_turn: str
    context_files: tuple[ContextFile, ...]
    credential_file: str | None
    transcript_path: str
    hermetic: Hermetic
    ambient_warnings: tuple[str, ...]

    @property
    def argv(self) -> tuple[str, ...]:
        return (self.program, *self.args)


_MENTION = re.compile(r"@\S+")


def ambient_mentions(prompt: str) -> tuple[str, ...]:
    """Each ``@`` followed by a non-space in the task: Claude Code reads it as a file no tool call,
    hook or record shows (docs/adapters/common.md#vendor-launch-order)."""
    return tuple(_MENTION.findall(prompt))


def settings_document() -> dict[str, object]:
    """The ``--settings`` document (docs/adapters/claude.md): empty permission lists and no hooks; every call
    is decided by the ``initialize`` callback instead."""
    return {"$schema": SETTINGS_SCHEMA, "permissions": {"allow": [], "deny": []}}


def check_shadowing(settings: Mapping[str, object]) -> Result[Mapping[str, object], Refusal]:
    """``shadowed`` (docs/adapters/common.md#one-event-per-call): a non-empty ``permissions.allow``/``deny``, or
    any ``hooks``, would let another layer decide."""
    permissions = settings.get("permissions")
    if not isinstance(permissions, Mapping) or permissions.get("allow") or permissions.get("deny"):
        return Failure(
            Refusal(
                "shadowed",
                "permissions.allow or permissions.deny in the claude settings document is not empty, so a "
                "vendor rule would decide before metaharness's callback",
            )
        )
    if "hooks" in settings:
        return Failure(
            Refusal("shadowed", "the claude settings document holds hooks, which would run beside metaharness's callback")
        )
    return Success(settings)


def check_arguments(args: tuple[str, ...]) -> Result[tuple[str, ...], Refusal]:
    """``denied-argument`` on the built argv, each flag compared by the part before ``=`` (docs/adapters/claude.md)."""
    values_of = {"--output-format", "--input-format", "--permission-prompts", "--setting-sources", "--settings", "--append-system-prompt", "--model"}
    values_of |= {"--effort", "--max-turns", "--plugin-dir", "--tools", "--mcp-config"}
    flag = denied_flag(args, DENIED_ARGUMENTS, values_of)
    if flag is None:
        return Success(args)
    return Failure(
        Refusal(
            "denied-argument",
            f"{flag} is denied on claude: it drops the hook, changes what an abstain means or shadows the hook",
        )
    )


def arguments(spec: ClaudeRunSpec, scratch: str, context_block: str | None) -> tuple[str, ...]:
    """argv after argv[0] in the exact order of docs/adapters/claude.md; the user turn goes on stdin."""
    args = ["-p", "--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]
    args += ["--await-initialize", "--permission-prompts", "none", "--replay-user-messages", "--strict-mcp-config"]
    args += ["--setting-sources", "", "--settings", posixpath.join(scratch, SETTINGS_FILE)]
    if context_block is not None:
        args += ["--append-system-prompt", context_block]
    if spec.model is not None:
        args += ["--model", spec.model]
    if spec.effort is not None:
        args += ["--effort", spec.effort]
    if spec.max_turns is not None:
        args += ["--max-turns", str(spec.max_turns)]
    for plugin in spec.plugins:
        args += ["--plugin-dir", posixpath.join(scratch, "plugins", plugin.name)]
    if spec.catalogue is not None:
        args += ["--tools", "", "--mcp-config", posixpath.join(scratch, MCP_CONFIG_FILE)]
    return tuple(args)


def mcp_config(spec: ClaudeRunSpec, scratch: str, cwd: str) -> dict[str, object]:
    """``mcp-config.json``: exactly one server, ``metaharness``, this build's ``mcp-serve`` over the
    scratch catalogue copy, ``--writable`` exactly when an entry writes (docs/adapters/claude.md,
    docs/hermetic.md#catalogue-delivery)."""
    assert spec.catalogue is not None and spec.own_cli
    served = [*spec.own_cli[1:], "mcp-serve", "--catalogue", posixpath.join(scratch, CATALOGUE_FILE)]
    served += ["--workspace", cwd] + (["--writable"] if needs_writable(spec.catalogue) else [])
    return {"mcpServers": {MCP_SERVER: {"type": "stdio", "command": spec.own_cli[0], "args": served}}}


def ambient_extras(spec: ClaudeRunSpec, managed_settings_present: bool) -> tuple[str, ...]:
    """What reaches a Claude Code child that no row controls, beyond the shared entries (docs/hermetic.md#attestation,
    docs/adapters/common.md#vendor-launch-order, #vendor-decisions; docs/adapters/claude.md): the ``@builtin`` plugins,
    that the CLI's stdin is writable by what can see its process, that an allow grants under observe, a managed settings file, and each ``@path`` mention in the task."""
    extras = ["built-in plugins: " + ", ".join(f"{name}@builtin" for name in BUILTIN_PLUGINS)]
    extras.append(STDIN_REACHABLE)
    if spec.decisions == "observe":
        extras.append("under observe an allow grants: it bypasses Claude Code's own permission prompt")
    if managed_settings_present:
        extras.append(f"managed settings file: {MANAGED_SETTINGS}")
    extras += [f"file mention in the task: {token}" for token in ambient_mentions(spec.prompt)]
    extras += [
        f"symbolic link skipped in --plugin-dir {plugin.source}: {link}" for plugin in spec.plugins for link in plugin.skipped
    ]
    return tuple(extras)


def attestation(
    spec: ClaudeRunSpec,
    scratch: str,
    cwd: str,
    environment: ChildEnvironment,
    memory: RowAttestation,
    walk: MemoryWalk,
    managed_settings_present: bool,
) -> Hermetic:
    """``session.started.hermetic`` for a claude launch (docs/hermetic.md#attestation, docs/hermetic.md#attestation)."""
    catalogue_sha256 = None if spec.catalogue is None else sha256_hex(scratch_copy(spec.catalogue))
    facts = launch_facts(KIND, spec, (scratch, cwd, environment), memory,
                         (spec.frame_digest, catalogue_sha256, spec.context), walk.root_names)  # fmt: skip
    return attest(
        msgspec.structs.replace(
            facts,
            mcp_servers=() if spec.catalogue is None else (MCP_SERVER,),
            installed_plugins=tuple(plugin.installed() for plugin in spec.plugins),
            extra_ambient=ambient_extras(spec, managed_settings_present),
        )
    )


def plan_claude_launch(
    spec: ClaudeRunSpec,
    caller_env: Mapping[str, str],
    scratch: str,
    program_facts: Mapping[str, ProgramCandidate],
    *,
    credential_file_present: bool = False,
    custody_path: str | None = None,
    upstream: str | None = None,
    walk: MemoryWalk | None = None,
    managed_settings_present: bool = False,
) -> Result[ClaudeLaunch, Refusal]:
    """The claude launch, or its refusal (docs/adapters/common.md#vendor-launch-order; docs/adapters/claude.md;
    docs/hermetic.md#refusal-order stages 5, 7 and 8).

    Refusals in order: the stage-5 credential ones, ``memory-ancestor-found``, ``program-not-found``,
    ``denied-environment``, ``denied-argument``, ``shadowed``, ``argument-too-long``. Nothing is
    started or written. ``walk`` is the memory walk the shell gathered (docs/hermetic.md#memory-file-walk); none means
    nothing was found.
    """
    custody = Custody(credential_file_present, custody_path, upstream)
    return Result.do(
        ClaudeLaunch(
            program=program,
            args=args,
            environment=environment,
            cwd=basis.cwd,
            scratch=scratch,
            claude_home=posixpath.join(scratch, "claude-home"),
            directories=_directories(spec, scratch),
            files=_scratch_files(spec, scratch, basis.cwd, compact(settings)),
            settings=compact(settings),
            user_turn=vendor_user_turn(KIND, spec, ()),
            context_files=context_record(spec.context, CONTEXT_CHANNEL) or (),
            credential_file=basis.posture.credential_file,
            transcript_path=posixpath.join(scratch, TRANSCRIPT_FILE),
            hermetic=attestation(
                spec, scratch, basis.cwd, environment, basis.memory, basis.walk, managed_settings_present
            ),
            ambient_warnings=tuple(
                f"the task holds {token}, which Claude Code reads as a file no tool call, hook or record shows"
                for token in ambient_mentions(spec.prompt)
            ),
        )
        for basis in vendor_basis(KIND, spec, caller_env, scratch, custody, walk, CANARY_LOADED.get(PINS[0]))
        for program in resolve_program(PROGRAM, path_floor(caller_env), program_facts)
        for _ in _catalogue_server_startable(spec)
        for environment in child_environment(basis.declaration, caller_env, scratch, basis.posture)
        for args in check_arguments(arguments(spec, scratch, _context_block(spec)))
        for settings in check_shadowing(settings_document())
        for _ in check_argument_sizes((program, *args), environment.strings(), spec.context)
    )


def _context_block(spec: ClaudeRunSpec) -> str | None:
    """The ``--context`` files rendered for the user turn, ``None`` without any."""
    return render_context_block(spec.context) if spec.context else None


def _catalogue_server_startable(spec: ClaudeRunSpec) -> Result[None, Refusal]:
    """``tool-server-missing``: a catalogue run needs this package's own CLI to start ``mcp-serve``."""
    if spec.catalogue is not None and not spec.own_cli:
        return Failure(
            Refusal(
                "tool-server-missing",
                "metaharness cannot name the Python interpreter it runs under, so the catalogue server "
                "(mcp-serve) cannot be started for --tool-surface owned",
            )
        )
    return Success(None)


def _scratch_files(spec: ClaudeRunSpec, scratch: str, cwd: str, settings: bytes) -> tuple[ScratchFile, ...]:
    """The generated scratch files in path order: the settings, and on a catalogue run the MCP configuration
    and the catalogue's scratch copy."""
    files: tuple[ScratchFile, ...] = (ScratchFile(posixpath.join(scratch, SETTINGS_FILE), settings),)
    if spec.catalogue is not None:
        files += (
            ScratchFile(posixpath.join(scratch, MCP_CONFIG_FILE), compact(mcp_config(spec, scratch, cwd))),
            ScratchFile(posixpath.join(scratch, CATALOGUE_FILE), scratch_copy(spec.catalogue)),
        )
    return tuple(sorted(files, key=lambda f: f.path))


def _directories(spec: ClaudeRunSpec, scratch: str) -> tuple[str, ...]:
    """The scratch directories to create (0700), parents first (docs/adapters/claude.md#scratch-layout)."""
    plugins = [posixpath.join("plugins", plugin.name) for plugin in spec.plugins]
    return scratch_directories(scratch, spec.cwd, ["claude-home", "tmp", *plugins])
