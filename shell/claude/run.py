"""``metaharness run claude``: stages 5–9 of docs/hermetic.md#refusal-order, the live loop and the wind-up
(docs/adapters/common.md#vendor-launch-order, #vendor-decisions; docs/adapters/claude.md;
docs/adapters/common.md#endpoint-route).

Facts are gathered here and handed to the pure stages in the order of docs/hermetic.md#refusal-order; the first refusal
stops the run before anything starts (the scratch root, once created, is removed again, and so is a
loopback proxy).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import sys
import tempfile

import msgspec

from metaharness.pure.budgets import HOOK_TIMEOUT_S
from metaharness.pure.catalogue import Catalogue
from metaharness.pure.claude.doctor import version_token
from metaharness.pure.claude.launch import (
    CANARY_LOADED,
    CATALOGUE_FILE,
    MANAGED_SETTINGS,
    MCP_SERVER,
    ClaudeLaunch,
    ClaudeRunSpec,
    plan_claude_launch,
)
from metaharness.pure.claude.plugins import PluginCopy, PluginFile, PluginTree, plan_plugins
from metaharness.pure.claude.seam import SessionFacts
from metaharness.pure.claude.session import open_session
from metaharness.pure.claude.vendor import PINS, PROGRAM, WIRE_PATHS
from metaharness.pure.confinement import (
    BRIDGE_PORT,
    bridge_url,
    confined_hermetic,
    pointed_at_bridge,
    tool_entry_variables,
)
from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import (
    EnvironmentDeclaration,
    credential_posture,
    custody_missing,
    loopback_custody_token,
    operator_login_file,
    path_floor,
)
from metaharness.pure.events import Event, Transcript, WarningRaised
from metaharness.pure.frames import Frame, refuse_frame_beside_observe
from metaharness.pure.hermetic import MEMORY_SHAPES, MemoryWalk, VerdictFacts, memory_walk
from metaharness.pure.loopback import (
    SYMBOLIC_PORT,
    loopback_expired,
    loopback_placeholder,
    upstream_root,
)
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_stages import decision_budget_ms, strict_version_refusal
from metaharness.shell.bounded_reads import open_regular
from metaharness.shell.catalogue_file import read_back_scratch_copy, read_catalogue
from metaharness.shell.child_end import end_unexpectedly
from metaharness.shell.child_tree import remove_tree
from metaharness.shell.claude.live import drive_claude
from metaharness.shell.confinement import ConfinedSpawn, Prepared, confine, effect_checked, prepare
from metaharness.shell.context_files import load_context_files
from metaharness.shell.facts import (
    caller_environment,
    directory_identity,
    gather_memory_facts,
    gather_program_candidates,
    own_cli,
    probe_stdout,
    readable_regular_file,
)
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.loopback import RouteProxy
from metaharness.shell.refusals import refuse
from metaharness.shell.run_signals import spawned_group
from metaharness.shell.staging import (
    EarlySignal,
    Refused,
    is_directory,
    reach_endpoint,
    stderr_line,
    take,
    unusable_directory,
)
from metaharness.shell.transcript_copy import TranscriptCopy
from metaharness.shell.view_route import start_route
from metaharness.shell.wind_up import RunAudit, retain_copies

VERSION_PROBE_S = 10


def declaration_of(options: RunOptions) -> EnvironmentDeclaration:
    """The credential, endpoint and actor declarations of a claude run (docs/hermetic.md#environment-floor,
    #credentials); under loopback the port stays symbolic until the proxy listens (docs/hermetic.md#refusal-order
    stage 8)."""
    return EnvironmentDeclaration(
        kind="claude", credentials=options.credentials, actor=options.actor, model_endpoint=options.model_endpoint
    )


def credentials_stage(options: RunOptions, caller_env: dict[str, str]) -> str | None:
    """Stage 5 (docs/hermetic.md#refusal-order): the declared credential's refusals; under loopback the custody file is
    parsed once (``loopback-custody-unreadable``). Returns the custody path under loopback."""
    declaration = declaration_of(options)
    custody = operator_login_file("claude", caller_env)
    if options.credentials == "loopback":
        try:
            with open(custody or "", "rb") as handle:
                data = handle.read()
        except OSError as error:
            raise Refused(custody_missing("claude", custody, str(error.strerror or error))) from None
        take(loopback_custody_token("claude", data))
        return custody
    take(credential_posture(declaration, caller_env, readable_regular_file(custody)))
    return None


def declared_inputs(options: RunOptions) -> tuple[tuple[ContextFileRead, ...], Catalogue | None, Frame | None]:
    """Stage 6: ``cwd-unusable``, ``retain-dir-unusable``, the ``--context`` refusals, the catalogue
    file's refusals (before the frame), the frame's refusals and ``observe-with-frame``."""
    unusable = unusable_directory(options)
    if unusable is not None:
        raise Refused(unusable)
    context = take(load_context_files(options.cwd, options.context)) if options.context else ()
    catalogue = take(read_catalogue(options.catalogue)) if options.catalogue is not None else None
    frame = take(read_frame_file(options.frame)) if options.frame is not None else None
    take(refuse_frame_beside_observe(options.decisions, options.frame))
    return context, catalogue, frame


def read_back(options: RunOptions, launch: ClaudeLaunch, catalogue: Catalogue, proxy_started: bool) -> None:
    """Stage 9 (d): the written catalogue copy must read back as the checked catalogue, else
    ``catalogue-copy-differs`` saying what had started by then (docs/hermetic.md#catalogue-refusals)."""
    happened = ["the scratch files had been written"]
    happened += ["the loopback proxy had started"] if proxy_started else []
    happened += ["the vendor binary had been run with --version"] if options.strict_version else []
    said = happened[0] if len(happened) == 1 else ", ".join(happened[:-1]) + " and " + happened[-1]
    path = os.path.join(launch.scratch, CATALOGUE_FILE)
    take(read_back_scratch_copy(path, catalogue, options.catalogue or "", said))


def plugin_tree(source: str) -> PluginTree:
    """What is at one ``--plugin-dir``: its readable regular files (bytes and mode), the symlinks and
    the entries of other kinds inside it, found without following any link or opening a FIFO."""
    if os.path.islink(source) or not is_directory(source):
        return PluginTree(source=source, is_directory=is_directory(source), is_symlink=os.path.islink(source))
    files: list[PluginFile] = []
    links: list[str] = []
    special: list[str] = []
    for base, directories, names in os.walk(source, followlinks=False):
        for name in sorted(directories + names):
            path = os.path.join(base, name)
            relative = os.path.relpath(path, source)
            status = os.lstat(path)
            if stat.S_ISLNK(status.st_mode):
                links.append(relative)
            elif stat.S_ISREG(status.st_mode) and os.access(path, os.R_OK):
                try:
                    with open_regular(path) as handle:
                        files.append(PluginFile(relative, handle.read(), stat.S_IMODE(status.st_mode)))
                except OSError:
                    special.append(relative)
            elif not stat.S_ISDIR(status.st_mode) and not stat.S_ISREG(status.st_mode):
                special.append(relative)
    return PluginTree(
        source=source, is_directory=True, is_symlink=False, files=tuple(files), symlinks=tuple(links),
        special=tuple(special),
    )  # fmt: skip


def tree_checks(options: RunOptions) -> tuple[MemoryWalk, tuple[PluginCopy, ...]]:
    """Stage 7: the memory walk (from the temp directory the scratch root is created in for a scratch
    run, else above ``--cwd``; docs/hermetic.md#memory-file-walk) and the plugin directories
    (``plugin-dir-unusable``)."""
    if options.cwd is None:
        start, found = gather_memory_facts(tempfile.gettempdir(), MEMORY_SHAPES["claude"])
        walk = memory_walk(start, found, scratch_parent=True)
    else:
        start, found = gather_memory_facts(options.cwd, MEMORY_SHAPES["claude"])
        walk = memory_walk(start, found)
    return walk, take(plan_plugins(tuple(plugin_tree(source) for source in options.plugin_dir)))


def materialise(launch: ClaudeLaunch, plugins: tuple[PluginCopy, ...]) -> None:
    """Write the scratch tree (docs/adapters/claude.md): directories 0700, generated files with their modes, plugin
    copies (symlinks skipped) and the credential file under operator-login."""
    for directory in launch.directories:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    for item in launch.files:
        descriptor = os.open(item.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, item.mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(item.data)
    for plugin in plugins:
        for copied in plugin.files:
            path = os.path.join(launch.scratch, "plugins", plugin.name, copied.path)
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, copied.mode & 0o700 or 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(copied.data)
    if launch.credential_file is not None:
        shutil.copyfile(launch.credential_file, os.path.join(launch.claude_home, ".credentials.json"))
        os.chmod(os.path.join(launch.claude_home, ".credentials.json"), 0o600)


def probe_version(launch: ClaudeLaunch) -> str | None:
    """``claude --version`` in the constructed environment: the first token starting with a digit
    (docs/adapters/common.md#pins)."""
    banner = probe_stdout([launch.program, "--version"], launch.environment.as_dict(), timeout_s=VERSION_PROBE_S,
                          cwd=launch.scratch)  # fmt: skip
    return None if banner is None else version_token(banner)


def strict_version(launch: ClaudeLaunch) -> None:
    """``--strict-version`` (docs/adapters/common.md#pins): off pin → ``version-off-pin`` naming both versions."""
    refusal = strict_version_refusal(launch.program, probe_version(launch), PINS)
    if refusal is not None:
        raise Refused(refusal)


def retained_files(launch: ClaudeLaunch) -> tuple[tuple[str, str], ...]:
    """What ``--retain-dir`` keeps of a claude run: the transcript (its control lines hold every hook request),
    the generated files and the loopback counters (``loopback.json``), never a credential (docs/cli.md#run)."""
    return (
        (launch.transcript_path, os.path.basename(launch.transcript_path)),
        *((item.path, os.path.basename(item.path)) for item in launch.files),
        (os.path.join(launch.scratch, "loopback.json"), "loopback.json"),
    )


def verdict_facts(options: RunOptions, launch: ClaudeLaunch, plugins: tuple[PluginCopy, ...]) -> VerdictFacts:
    """What the rows of a claude run are read against (docs/hermetic.md#verdicts, docs/hermetic.md#attestation): the
    plugin copies, the declared key, the launch's MCP set (the catalogue's server, when one is named), the pins and
    the versions with a memory canary entry."""
    return VerdictFacts(
        kind="claude",
        declared_plugins=tuple(plugin.name for plugin in plugins),
        declared_key=options.credentials == "api-key",
        launch_mcp_servers=(MCP_SERVER,) if options.catalogue is not None else (),
        planned_cwd=directory_identity(launch.cwd),
        pins=PINS,
        canary_versions=tuple(CANARY_LOADED),
    )


def plan(
    options: RunOptions,
    caller_env: dict[str, str],
    caller_cwd: str,
    scratch: str,
    *,
    context: tuple[ContextFileRead, ...],
    catalogue: Catalogue | None,
    frame: Frame | None,
    walk: MemoryWalk,
    plugins: tuple[PluginCopy, ...],
    custody: str | None,
    upstream: str | None,
    declaration: EnvironmentDeclaration,
) -> ClaudeLaunch:
    """Stage 8: the launch, planned over gathered facts."""
    cwd = None if options.cwd is None else os.path.normpath(os.path.join(caller_cwd, options.cwd))
    spec = ClaudeRunSpec(
        prompt=options.prompt or "",
        decisions=options.decisions,
        hermetic=options.hermetic,
        model=options.model,
        effort=options.effort,
        max_turns=options.max_turns,
        cwd=cwd,
        scratch_cwd=options.scratch_cwd,
        environment=declaration,
        context=context,
        plugins=plugins,
        frame_digest=None if frame is None else frame.digest,
        catalogue=catalogue,
        own_cli=own_cli() if catalogue is not None else (),
    )
    candidates = gather_program_candidates(PROGRAM, path_floor(caller_env))
    return take(
        plan_claude_launch(
            spec, caller_env, scratch, candidates,
            credential_file_present=readable_regular_file(operator_login_file("claude", caller_env)),
            custody_path=custody, upstream=upstream, walk=walk,
            managed_settings_present=os.path.lexists(MANAGED_SETTINGS),
        )
    )  # fmt: skip


def start_proxy(
    options: RunOptions, placeholder: str | None, custody: str | None, prepared: Prepared | None, scratch: str
) -> RouteProxy | None:
    """Stage 9 (a): the route proxy listens, on the view's socket when confined, else on ``127.0.0.1``
    under loopback (``loopback-not-started`` when it cannot)."""
    if prepared is not None:
        try:
            return start_route("claude", prepared, scratch, placeholder)
        except OSError as error:
            reason = error.strerror or error
            raise Refused(Refusal("loopback-not-started", f"the route proxy could not listen: {reason}")) from None
    if custody is None:
        return None
    proxy = RouteProxy("claude", placeholder, custody, upstream_root("claude", options.model_endpoint), WIRE_PATHS)
    try:
        proxy.start()
    except OSError as error:
        proxy.stop()
        raise Refused(
            Refusal("loopback-not-started", f"the loopback proxy could not listen on 127.0.0.1: {error.strerror or error}")
        ) from None
    return proxy


def expired_events(proxy: RouteProxy) -> tuple[Event, ...]:
    """The proxy's one ``auth.expired`` (docs/adapters/common.md#endpoint-route), when it is due and not yet written."""
    detail = proxy.take_expired()
    return () if detail is None else (loopback_expired(detail),)


def late_events(
    options: RunOptions, run_id: str, launch: ClaudeLaunch, proxy: RouteProxy | None, workspace: bytes | None = None
) -> tuple[Event, ...]:
    """The wind-up's own events: the proxy's one ``auth.expired`` and ``LOOPBACK_REFUSED``, then the
    ``--retain-dir`` copies (``loopback.json`` among them) and any ``RETAIN_FAILED``."""
    events = () if proxy is None else proxy.wind_up(launch.scratch)
    return (*events, *retain_copies(options.retain_dir, run_id, launch.scratch, retained_files(launch), workspace))


def routed(
    options: RunOptions, declaration: EnvironmentDeclaration, prepared: Prepared | None, proxy: RouteProxy
) -> EnvironmentDeclaration:
    """The declaration pointed at the route: the loopback port (the bridge's when confined), or the
    bridge in place of ``--model-endpoint``."""
    if declaration.loopback_placeholder is not None:
        port = str(BRIDGE_PORT) if prepared is not None else str(proxy.port)
        return msgspec.structs.replace(declaration, loopback_port=port)
    if prepared is not None and prepared.route is not None and options.model_endpoint is not None:
        return msgspec.structs.replace(declaration, model_endpoint=bridge_url(options.model_endpoint))
    return declaration


def confined_launch(
    prepared: Prepared | None, launch: ClaudeLaunch, plugins: tuple[PluginCopy, ...], walk: MemoryWalk
) -> tuple[ClaudeLaunch, ConfinedSpawn | None]:
    """The launch with rows H12 and H13, and its view when confined: writable the child's directory,
    the config home and TMPDIR; the generated files and plugin copies read-only."""
    spawn = None
    if prepared is not None:
        scratch = launch.scratch
        credential = [os.path.join(launch.claude_home, ".credentials.json")] if launch.credential_file else []
        spawn = take(
            confine(
                prepared, program=launch.program, command=launch.argv, child_path=launch.environment.as_dict()["PATH"],
                scratch=scratch, cwd=launch.cwd,
                writable=(launch.cwd, launch.claude_home, os.path.join(scratch, "tmp")),
                governing=(*(item.path for item in launch.files), *credential,
                           *(os.path.join(scratch, "plugins", plugin.name) for plugin in plugins)),
                tool_reads=tuple(item.path for item in launch.files if item.path.endswith(CATALOGUE_FILE)),
            )
        )  # fmt: skip
        variables = tool_entry_variables("claude", launch.environment.variables, spawn.confinement)
        launch = msgspec.structs.replace(
            launch, environment=msgspec.structs.replace(launch.environment, variables=variables)
        )
    confinement = None if spawn is None else spawn.confinement
    loopback = launch.environment.posture.loopback
    hermetic = confined_hermetic(launch.hermetic, confinement, loopback, "claude", walk)
    return msgspec.structs.replace(launch, hermetic=hermetic), spawn


def run_claude(options: RunOptions) -> int:
    """Run ``options`` (through stages 1–4) from stage 5 on; the exit code of docs/hermetic.md#exit-codes. The owned
    surface without a catalogue (its three verbs) is refused ``not-built`` rather than run as the
    native one."""
    if options.tool_surface == "owned" and options.catalogue is None:
        return refuse(
            Refusal(
                "not-built",
                "--tool-surface owned without --catalogue is not built in this build for claude: it waits for "
                "the owned verbs' call resolution (docs/adapters/claude.md#owned-surface-and-catalogue)",
            )
        )
    run_id = f"claude-{os.getpid()}"
    caller_env = caller_environment()
    caller_cwd = os.getcwd()
    scratch: str | None = None
    proxy: RouteProxy | None = None
    with EarlySignal() as early:
        try:
            audit = RunAudit(options)
            custody = credentials_stage(options, caller_env)
            prepared = prepare(options, caller_env, custody)
            if isinstance(prepared, Refusal):
                raise Refused(prepared)
            early.check()
            context, catalogue, frame = declared_inputs(options)
            walk, plugins = tree_checks(options)
            early.check()
            scratch = tempfile.mkdtemp(prefix="metaharness-")
            declaration = declaration_of(options)
            upstream = upstream_root("claude", options.model_endpoint) if custody is not None else None
            placeholder: str | None = None
            if custody is not None:
                placeholder = loopback_placeholder(run_id, secrets.token_bytes(12))
                declaration = msgspec.structs.replace(
                    declaration, loopback_port=SYMBOLIC_PORT, loopback_placeholder=placeholder
                )

            def planned(declared: EnvironmentDeclaration, at: str) -> ClaudeLaunch:
                return plan(
                    options, caller_env, caller_cwd, at, context=context, catalogue=catalogue, frame=frame, walk=walk,
                    plugins=plugins,
                    custody=custody, upstream=upstream, declaration=declared,
                )  # fmt: skip

            launch = planned(declaration, scratch)
            proxy = start_proxy(options, placeholder, custody, prepared, scratch)
            if proxy is not None:
                launch = planned(routed(options, declaration, prepared, proxy), scratch)
                if prepared is not None and custody is None and options.model_endpoint is None:
                    environment = msgspec.structs.replace(
                        launch.environment, variables=pointed_at_bridge("claude", launch.environment.variables)
                    )
                    launch = msgspec.structs.replace(launch, environment=environment)
            materialise(launch, plugins)
            launch, spawn = confined_launch(prepared, launch, plugins, walk)
            if options.strict_version:
                strict_version(launch)
            if catalogue is not None:
                read_back(options, launch, catalogue, proxy is not None)
            reach_endpoint(options)
            early.check()
        except Refused as refused:
            if proxy is not None:
                proxy.stop()
            if scratch is not None:
                remove_tree(scratch)
            return refuse(refused.refusal)
    audit.names_program(launch.program)
    if proxy is not None and spawn is not None:
        audit.route = lambda: proxy.route
    if proxy is not None:
        audit.account = lambda: proxy.account
    def rows_facts() -> VerdictFacts:
        """The facts the rows are checked against, with the effect checks read after the spawn."""
        return effect_checked(verdict_facts(options, launch, plugins), spawn)

    audit.rows_facts = rows_facts
    facts_of_session = SessionFacts(
        transcript=Transcript(path=launch.transcript_path, digest=None, bytes=None),
        hermetic=launch.hermetic,
        context_files=launch.context_files,
        catalogue=catalogue,
    )
    warnings = tuple(WarningRaised(code="AMBIENT_INPUT", message=m) for m in launch.ambient_warnings)
    session, opening = open_session(facts_of_session, run_id, options.decisions, frame, warnings, turn=launch.user_turn,
                                    vendor_budget_ms=decision_budget_ms(options.decision_deadline, HOOK_TIMEOUT_S * 1000))  # fmt: skip
    for line in opening:
        if isinstance(line, bytes):
            audit.write_event(line)
    try:
        with TranscriptCopy(launch.transcript_path) as transcript:
            audit.arm(launch.cwd)
            outcome = drive_claude(
                argv=launch.argv, confined=spawn, env=launch.environment.as_dict(), cwd=launch.cwd, session=session,
                opening=tuple(effect for effect in opening if not isinstance(effect, bytes)), write_event=audit.write_event, transcript=transcript,
                commands=sys.stdin.fileno() if sys.stdin is not None else None,
                on_steering_refusal=stderr_line, late_events=lambda: (*audit.limits.late_events(), *transcript.late_events(), *late_events(options, run_id, launch, proxy, audit.workspace_diff())),
                alerts=None if proxy is None else (proxy.alert_fd, lambda: expired_events(proxy)),
            )  # fmt: skip
        if outcome.refusal is not None:
            return refuse(outcome.refusal)
        return audit.exit_code(rows_facts(), launch.transcript_path, outcome.reason, transcript.refusal())
    except OSError as error:
        if spawned_group() is not None:
            return end_unexpectedly(audit, run_id, error)
        return refuse(Refusal("spawn-failed", f"{launch.program} could not be started: {error.strerror or error}"))
    except Exception as error:  # noqa: BLE001 - the child is stopped and the stream closed whatever failed
        return end_unexpectedly(audit, run_id, error)
    finally:
        if proxy is not None:
            proxy.stop()
        remove_tree(launch.scratch)
