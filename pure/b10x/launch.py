"""Planning a b10x launch: scratch layout, the child's environment, the program and the argv
(docs/adapters/b10x.md#launch).

Planning is a pure function of the checked run options and the facts gathered around them (the
caller's environment and working directory, the scratch root, the PATH facts, the context bytes);
copying, probing and spawning happen around it in the shell. Nothing here starts a process or writes
a file.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

import msgspec
from returns.result import Result, Success

from metaharness.pure.b10x.admissibility import check_frame_admissible
from metaharness.pure.b10x.vendor import DEFAULT_MODELS, KIND, PIN, PROGRAM
from metaharness.pure.context import (
    ContextCopy,
    ContextFileRead,
    check_argument_sizes,
    context_record,
    plan_context_copies,
)
from metaharness.pure.environment import (
    ChildEnvironment,
    CredentialPosture,
    EnvironmentDeclaration,
    ProgramCandidate,
    child_environment,
    credential_posture,
    path_floor,
    resolve_program,
)
from metaharness.pure.events import ContextFile, Hermetic, InstalledPlugin
from metaharness.pure.frames import Frame
from metaharness.pure.hermetic import (
    MemoryWalk,
    RowAttestation,
    attest,
    launch_facts,
    memory_row,
    workdir_mode,
)
from metaharness.pure.jsonline import sha256_hex
from metaharness.pure.modes import DecisionMode
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal

CONTEXT_CHANNEL = "loop-context"

class B10xLaunchFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The facts a b10x launch is planned over, gathered by the shell (or given by a library caller):
    the caller's environment and working directory, the scratch root, the program resolved by
    :func:`resolve_b10x_program`, the ``--context`` files already read and checked, the loaded
    ``--frame`` and the memory walk (``metaharness.pure.hermetic.memory_walk``; ``None`` when it was
    not run, which row H11 then says)."""

    caller_env: dict[str, str]
    caller_cwd: str
    scratch: str
    program: str
    context: tuple[ContextFileRead, ...] = ()
    frame: Frame | None = None
    memory: MemoryWalk | None = None


class PluginCopy(msgspec.Struct, frozen=True):
    """An operator plugin directory and the scratch copy the loop is handed instead (docs/cli.md#run)."""

    source: str
    copy: str


class B10xLaunch(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the shell needs to start the loop: ``program`` then ``args`` (argv after argv[0]),
    the constructed environment, the working directory, the scratch tree and the record's path."""

    program: str
    args: tuple[str, ...]
    environment: ChildEnvironment
    cwd: str
    scratch: str
    directories: tuple[str, ...]
    files: tuple[ContextCopy, ...]
    plugin_copies: tuple[PluginCopy, ...]
    context_files: tuple[ContextFile, ...]
    transcript_path: str
    answers_on_stdin: bool
    attestation: Hermetic

    @property
    def argv(self) -> tuple[str, ...]:
        return (self.program, *self.args)


def child_path(caller_env: Mapping[str, str]) -> str:
    """The PATH the b10x child gets and the program is resolved on (docs/adapters/b10x.md#environment,
    #program-and-version)."""
    return path_floor(caller_env)


def resolve_b10x_program(
    caller_env: Mapping[str, str], program_facts: Mapping[str, ProgramCandidate]
) -> Result[str, Refusal]:
    """``b10x-harness`` resolved on the child's PATH at plan time, the joined path unresolved
    (docs/adapters/b10x.md#program-and-version); ``program_facts`` are the shell's facts for each candidate.
    ``program-not-found`` names the PATH searched."""
    return resolve_program(PROGRAM, child_path(caller_env), program_facts)


def version_token(banner: str) -> str | None:
    """The first whitespace-separated token of a ``--version`` banner that begins with a digit
    (docs/adapters/b10x.md#program-and-version: ``b10x-harness 0.1.0`` → ``0.1.0``), else ``None``."""
    return next((token for token in banner.split() if token[:1].isdigit()), None)


def workspace_of(options: RunOptions, caller_cwd: str, scratch: str) -> str:
    """``--cwd`` made absolute against the caller's working directory, not symlink-resolved; else
    ``<scratch>/work`` (docs/adapters/b10x.md#scratch-layout)."""
    if options.cwd is None:
        return posixpath.join(scratch, "work")
    return _absolute(options.cwd, caller_cwd)


def _absolute(path: str, caller_cwd: str) -> str:
    return posixpath.normpath(posixpath.join(caller_cwd, path))


def approval_arguments(decisions: DecisionMode) -> tuple[str, ...]:
    """Row 4 of docs/adapters/b10x.md#argv: observe asks about nothing; frame and ask put the ceiling at the floor."""
    if decisions == "observe":
        return ("--approve-up-to", "high")
    return ("--approve-up-to", "low", "--approve", "caller")


def plugin_copy_path(scratch: str, position: int, source: str) -> str:
    """``<scratch>/plugins/<k>/<directory name>``, k 1-based *(design choice)*."""
    return posixpath.join(scratch, "plugins", str(position), posixpath.basename(source.rstrip("/")) or "plugin")


def environment_declaration(options: RunOptions, caller_cwd: str) -> EnvironmentDeclaration:
    """The credential, toolchain and actor declarations of a b10x run (docs/adapters/b10x.md#environment,
    docs/hermetic.md#credentials)."""
    token_file = options.subscription_token_file
    return EnvironmentDeclaration(
        kind="b10x",
        credentials=options.credentials,
        api_key_secret=options.api_key_secret,
        subscription_token_file=None if token_file is None else _absolute(token_file, caller_cwd),
        subscription_token_env=options.subscription_token_env,
        subscription_token_pointer=options.subscription_token_pointer,
        toolchain=options.toolchain,
        actor=options.actor,
        model_endpoint=options.model_endpoint,
    )


def plan_b10x_launch(options: RunOptions, facts: B10xLaunchFacts) -> Result[B10xLaunch, Refusal]:
    """The b10x launch, or the refusal that stops it (docs/adapters/b10x.md#launch,
    docs/hermetic.md#refusal-order stages 5 and 8).

    ``options`` have passed stages 1–4; ``facts`` were gathered around them. Refusals:
    ``api-key-missing``, ``subscription-token-env-unset`` (stage 5), ``denied-environment``,
    ``argument-too-long`` (stage 8). Nothing is started or written.
    """
    declaration = environment_declaration(options, facts.caller_cwd)
    return Result.do(
        launch
        for posture in credential_posture(declaration, facts.caller_env, credential_file_present=False)
        for _ in (Success(None) if facts.frame is None else check_frame_admissible(facts.frame))
        for environment in child_environment(declaration, facts.caller_env, facts.scratch, posture)
        for launch in _measured_launch(options, facts, posture, environment)
    )


def _measured_launch(
    options: RunOptions, facts: B10xLaunchFacts, posture: CredentialPosture, environment: ChildEnvironment
) -> Result[B10xLaunch, Refusal]:
    """The launch once its credential and environment are settled, or ``argument-too-long``."""
    scratch = facts.scratch
    workspace = workspace_of(options, facts.caller_cwd, scratch)
    plugins = tuple(
        PluginCopy(_absolute(source, facts.caller_cwd), plugin_copy_path(scratch, k, source))
        for k, source in enumerate(options.plugin_dir, start=1)
    )
    files = plan_context_copies(scratch, facts.context)
    args = _arguments(options, facts.caller_cwd, workspace, posture.loop_arguments, plugins, files)
    launch = B10xLaunch(
        program=facts.program,
        args=args,
        environment=environment,
        cwd=workspace,
        scratch=scratch,
        directories=_directories(options, scratch, files),
        files=tuple(sorted(files, key=lambda f: f.destination)),
        plugin_copies=plugins,
        context_files=context_record(facts.context, CONTEXT_CHANNEL) or (),
        transcript_path=posixpath.join(scratch, "loop.jsonl"),
        answers_on_stdin=options.decisions != "observe",
        attestation=launch_attestation(options, facts, workspace, environment, plugins),
    )
    measured = check_argument_sizes(launch.argv, launch.environment.strings(), facts.context, len(launch.argv) - 1)
    return measured.map(lambda _: launch)


def launch_attestation(
    options: RunOptions,
    facts: B10xLaunchFacts,
    workspace: str,
    environment: ChildEnvironment,
    plugins: tuple[PluginCopy, ...],
) -> Hermetic:
    """``session.started.hermetic`` for a b10x launch (docs/hermetic.md#attestation,
    docs/adapters/b10x.md#attestation)."""
    mode = workdir_mode(options.cwd, options.scratch_cwd)
    walk = facts.memory
    if walk is None:
        memory = RowAttestation("H11", "unavailable", "the ancestor walk was not run for this plan")
    else:
        memory = memory_row("b10x", mode, walk).value_or(
            RowAttestation("H11", "unavailable", f"the ancestor walk from {walk.start} found a memory file")
        )
    frame_digest = facts.frame.digest if facts.frame is not None else None
    shared = launch_facts(KIND, options, (facts.scratch, workspace, environment), memory,
                          (frame_digest, None, facts.context), walk.root_names if walk is not None else ())  # fmt: skip
    return attest(
        msgspec.structs.replace(
            shared,
            hooks=None if options.hooks is None else _absolute(options.hooks, facts.caller_cwd),
            installed_plugins=tuple(
                InstalledPlugin(name=posixpath.basename(p.copy), source=p.copy, version=None) for p in plugins
            ),
        )
    )


def _directories(options: RunOptions, scratch: str, files: tuple[ContextCopy, ...]) -> tuple[str, ...]:
    """The scratch directories to create (0700), parents first."""
    wanted = [posixpath.join(scratch, "config")]
    if options.cwd is None:
        wanted.append(posixpath.join(scratch, "work"))
    for item in files:
        parent = posixpath.dirname(item.destination)
        chain = []
        while parent != scratch and parent not in wanted and parent not in chain:
            chain.append(parent)
            parent = posixpath.dirname(parent)
        wanted.extend(reversed(chain))
    return tuple(wanted)


def verified_versions(own_version: str | None) -> tuple[str, ...]:
    """The versions a run is verified at (docs/adapters/b10x.md#program-and-version): the pin, and this distribution's
    own version when the resolved program is this distribution's own loop, which its own vectors verify."""
    return (PIN,) if own_version is None else (PIN, own_version)


def launch_model(options: RunOptions) -> str:
    """``--model``, else the wire's default (``DEFAULT_MODELS``; the default wire is ``openai-responses``)."""
    return options.model or DEFAULT_MODELS[options.model_wire or "openai-responses"]


def _arguments(
    options: RunOptions,
    caller_cwd: str,
    workspace: str,
    credential_arguments: tuple[str, ...],
    plugins: tuple[PluginCopy, ...],
    files: tuple[ContextCopy, ...],
) -> tuple[str, ...]:
    """argv after argv[0], rows 1–13 of docs/adapters/b10x.md#argv in this exact order."""
    assert options.model_endpoint is not None, "stage 4 requires it on b10x"
    args: list[str] = ["run", "--execution-path", "metaharness", "--json", *approval_arguments(options.decisions)]
    args += ["--no-session", "--workspace", workspace, "--base-url", options.model_endpoint, "--model", launch_model(options)]
    if options.model_wire is not None:
        args += ["--wire", options.model_wire]
    args += credential_arguments
    if options.hooks is not None:
        args += ["--hooks", _absolute(options.hooks, caller_cwd)]
    if options.toolchain is not None:
        args += ["--toolchain", options.toolchain]
    if options.driver is not None:
        args += ["--driver", _absolute(options.driver, caller_cwd)]
    for glob, scope in options.write_scope:
        args += ["--write-scope", f"{glob}={scope}"]
    if options.scope_announce == "silent":
        args += ["--scope-announce", "silent"]
    if options.prices is not None:
        args += ["--prices", _absolute(options.prices, caller_cwd)]
    if options.substrate is not None:
        args += ["--substrate", _absolute(options.substrate, caller_cwd)]
    elif options.substrate_embedded:
        args.append("--substrate-embedded")
    if options.cgroup_root is not None:
        args += ["--cgroup-root", _absolute(options.cgroup_root, caller_cwd)]
    for program in options.allow_program:
        args += ["--allow-program", program]
    if options.max_turns is not None:
        args += ["--max-turns", str(options.max_turns)]
    for plugin in plugins:
        args += ["--plugin-dir", plugin.copy]
    for item in files:
        args += ["--context", item.destination]
    args += ["--input", options.prompt if options.prompt is not None else ""]
    return tuple(args)


def launch_fixture(launch: B10xLaunch) -> dict[str, object]:
    """The C1 conformance fixture of a launch (docs/adapters/b10x.md#conformance-vectors): program, args, env, cwd,
    files sorted by path as {path, sha256, bytes}, and ``context_files`` when any was declared."""
    fixture: dict[str, object] = {
        "program": launch.program,
        "args": list(launch.args),
        "env": launch.environment.as_dict(),
        "cwd": launch.cwd,
        "files": [{"path": f.destination, "sha256": sha256_hex(f.data), "bytes": len(f.data)} for f in launch.files],
    }
    if launch.context_files:
        fixture["context_files"] = [msgspec.to_builtins(item) for item in launch.context_files]
    return fixture


DECLARED_FILES = ("--hooks", "--driver", "--prices", "--substrate", "--oauth-token-file")
"""The loop's options naming a file it reads (or a socket it dials) itself; each is bound into the view."""


def declared_files(launch: B10xLaunch) -> tuple[str, ...]:
    """The paths the loop's argv names after one of :data:`DECLARED_FILES`."""
    return tuple(value for flag, value in zip(launch.args, launch.args[1:], strict=False) if flag in DECLARED_FILES)


def session_bus(launch: B10xLaunch) -> tuple[str, ...]:
    """The session bus socket when the loop reads its key from the secret store (``--api-key-secret``):
    each ``unix:path=`` of ``DBUS_SESSION_BUS_ADDRESS``, else ``$XDG_RUNTIME_DIR/bus``."""
    if "--api-key-secret" not in launch.args:
        return ()
    environment = launch.environment.as_dict()
    paths = tuple(
        value.partition("path=")[2].split(",")[0]
        for value in environment.get("DBUS_SESSION_BUS_ADDRESS", "").split(";")
        if value.startswith("unix:") and "path=" in value
    )
    runtime = environment.get("XDG_RUNTIME_DIR")
    return paths or ((posixpath.join(runtime, "bus"),) if runtime else ())
