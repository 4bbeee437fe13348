"""``metaharness run claude``: stages 5–9 of docs/hermetic.md#refusal-order, the live loop and the wind-up
(docs/adapters/common.md#vendor-launch-order, #vendor-decisions; docs/adapters/claude.md;
docs/adapters/common.md#endpoint-route).

Facts are gathered here and handed to the pure stages in the order of docs/hermetic.md#refusal-order; the first refusal
stops the run before anything starts (the scratch root, once created, is removed again, and so is a
loopback proxy).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from functools import partial

import msgspec

from metaharness.pure.budgets import HOOK_TIMEOUT_S, PROBE_S
from metaharness.pure.catalogue import Catalogue, started_by_then
from metaharness.pure.claude.adapter import LOOPBACK
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
from metaharness.pure.claude.plugins import PluginCopy
from metaharness.pure.claude.seam import SessionFacts
from metaharness.pure.claude.session import open_session
from metaharness.pure.claude.vendor import KIND, PINS, PROGRAM, WIRE_PATHS
from metaharness.pure.confinement import (
    bridged_environment,
    confined_hermetic,
    tool_entry_environment,
)
from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import (
    EnvironmentDeclaration,
    operator_login_file,
    path_floor,
)
from metaharness.pure.events import Event, EventValue, Transcript, WarningRaised
from metaharness.pure.frames import Frame
from metaharness.pure.hermetic import MemoryWalk, VerdictFacts
from metaharness.pure.loopback import (
    SYMBOLIC_PORT,
    loopback_expired,
    loopback_placeholder,
    upstream_root,
)
from metaharness.pure.options import RunOptions
from metaharness.pure.route_target import BridgeEndpoint, LoopbackPort, RouteTarget, VendorAtBridge, route_target
from metaharness.pure.run_end import RunEnd
from metaharness.pure.run_stages import decision_budget_ms, strict_version_refusal
from metaharness.shell.catalogue_file import read_back_scratch_copy
from metaharness.shell.claude.inputs import ClaudeInputs, declaration_of
from metaharness.shell.claude.live import drive_claude
from metaharness.shell.confinement import ConfinedSpawn, Prepared, confine
from metaharness.shell.facts import (
    gather_program_candidates,
    own_cli,
    probe_stdout,
    readable_regular_file,
)
from metaharness.shell.loopback import RouteProxy
from metaharness.shell.run_engine import (
    LateEvents,
    Launched,
    LoopbackRoute,
    RunHold,
    refuse_if,
    run_kind,
    start_route_proxy,
)
from metaharness.shell.staging import (
    EarlySignal,
    stderr_line,
    take,
)
from metaharness.shell.transcript_copy import TranscriptCopy
from metaharness.shell.tree_facts import directory_identity
from metaharness.shell.wind_up import RunAudit


def read_back(options: RunOptions, launch: ClaudeLaunch, catalogue: Catalogue, proxy_started: bool) -> None:
    """Stage 9 (d): the written catalogue copy must read back as the checked catalogue, else
    ``catalogue-copy-differs`` saying what had started by then (docs/hermetic.md#catalogue-refusals)."""
    said = started_by_then(proxy_started=proxy_started, probed=options.strict_version)
    path = os.path.join(launch.scratch, CATALOGUE_FILE)
    take(read_back_scratch_copy(path, catalogue, options.catalogue or "", said))


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
    banner = probe_stdout([launch.program, "--version"], launch.environment.as_dict(), timeout_s=PROBE_S,
                          cwd=launch.scratch)  # fmt: skip
    return None if banner is None else version_token(banner)


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
        kind=KIND,
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
            credential_file_present=readable_regular_file(operator_login_file(KIND, caller_env)),
            custody_path=custody, upstream=upstream, walk=walk,
            managed_settings_present=os.path.lexists(MANAGED_SETTINGS),
        )
    )  # fmt: skip


def expired_events(proxy: RouteProxy) -> tuple[Event, ...]:
    """The proxy's one ``auth.expired`` (docs/adapters/common.md#endpoint-route), when it is due and not yet written."""
    detail = proxy.take_expired()
    return () if detail is None else (loopback_expired(detail),)


def routed(launch: ClaudeLaunch, declaration: EnvironmentDeclaration, target: RouteTarget,
           planned: Callable[[EnvironmentDeclaration], ClaudeLaunch]) -> ClaudeLaunch:  # fmt: skip
    """The launch re-planned onto the route: the loopback port, or the bridge in place of ``--model-endpoint``, or
    the vendor API's base URL pointed at the bridge."""
    match target:
        case LoopbackPort(port=port):
            return planned(msgspec.structs.replace(declaration, loopback_port=port))
        case BridgeEndpoint(endpoint=endpoint):
            return planned(msgspec.structs.replace(declaration, model_endpoint=endpoint))
        case VendorAtBridge():
            return msgspec.structs.replace(launch, environment=bridged_environment(KIND, launch.environment))


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
        launch = msgspec.structs.replace(
            launch, environment=tool_entry_environment(KIND, launch.environment, spawn.confinement)
        )
    confinement = None if spawn is None else spawn.confinement
    loopback = launch.environment.posture.loopback
    hermetic = confined_hermetic(launch.hermetic, confinement, loopback, KIND, walk)
    return msgspec.structs.replace(launch, hermetic=hermetic), spawn


def _staged(inputs: ClaudeInputs, options: RunOptions, hold: RunHold, early: EarlySignal) -> Launched:
    """Stages 8–9 of a claude run, after its stages 5–7 (``inputs``): the audit, the plan, the route and the re-plan
    onto it, the scratch tree, the view, the probe, the catalogue's copy (the engine checks the endpoint)."""
    audit = RunAudit(options)
    early.check()
    caller_env, caller_cwd, custody, prepared = inputs.caller_env, inputs.caller_cwd, inputs.custody, inputs.prepared
    context, catalogue, frame, walk, plugins = inputs.context, inputs.catalogue, inputs.frame, inputs.walk, inputs.plugins
    scratch = hold.scratch_root("metaharness-")
    declaration = declaration_of(options)
    upstream = upstream_root(LOOPBACK, options.model_endpoint) if custody is not None else None
    placeholder = None if custody is None else loopback_placeholder(hold.run_id, os.urandom(12))
    if placeholder is not None:
        declaration = msgspec.structs.replace(declaration, loopback_port=SYMBOLIC_PORT, loopback_placeholder=placeholder)

    def planned(declared: EnvironmentDeclaration) -> ClaudeLaunch:
        return plan(
            options, caller_env, caller_cwd, scratch, context=context, catalogue=catalogue, frame=frame, walk=walk,
            plugins=plugins, custody=custody, upstream=upstream, declaration=declared,
        )  # fmt: skip

    launch = planned(declaration)
    loopback = None if custody is None or placeholder is None else LoopbackRoute(
        LOOPBACK, placeholder, custody, upstream_root(LOOPBACK, options.model_endpoint), WIRE_PATHS,
        "the loopback proxy could not listen on 127.0.0.1:",
    )  # fmt: skip
    proxy = start_route_proxy(hold, KIND, prepared, placeholder, loopback)
    if proxy is not None:
        target = route_target(loopback=placeholder is not None, confined=prepared is not None,
                              model_endpoint=options.model_endpoint, proxy_port=proxy.port)  # fmt: skip
        launch = routed(launch, declaration, target, planned)
    materialise(launch, plugins)
    launch, spawn = confined_launch(prepared, launch, plugins, walk)
    if options.strict_version:
        refuse_if(strict_version_refusal(launch.program, probe_version(launch), PINS))
    if catalogue is not None:
        read_back(options, launch, catalogue, proxy is not None)
    return Launched(
        audit=audit, program=launch.program, scratch=launch.scratch, spawn=spawn, record=launch.transcript_path,
        retained=retained_files(launch), verdict_facts=partial(verdict_facts, options, launch, plugins),
        drive=partial(_drive, options, audit, launch, (catalogue, frame, spawn, proxy), hold.run_id),
    )  # fmt: skip


def _drive(
    options: RunOptions, audit: RunAudit, launch: ClaudeLaunch,
    held: tuple[Catalogue | None, Frame | None, ConfinedSpawn | None, RouteProxy | None], run_id: str,
    late: LateEvents,
) -> RunEnd:  # fmt: skip
    """Claude Code on its stdio: the session's opening lines, the record and its control requests on stdout,
    answers on its stdin, the proxy's ``auth.expired`` as it arises."""
    catalogue, frame, spawn, proxy = held
    facts = SessionFacts(transcript=Transcript(path=launch.transcript_path, digest=None, bytes=None),
                         hermetic=launch.hermetic, context_files=launch.context_files, catalogue=catalogue)  # fmt: skip
    warnings = tuple(WarningRaised(code="AMBIENT_INPUT", message=m) for m in launch.ambient_warnings)
    budget = decision_budget_ms(options.decision_deadline, HOOK_TIMEOUT_S * 1000)
    session, opening = open_session(facts, run_id, options.decisions, frame, warnings, turn=launch.user_turn,
                                    vendor_budget_ms=budget)  # fmt: skip
    for value in opening:
        if isinstance(value, EventValue):
            audit.write_event(value)
    with TranscriptCopy(launch.transcript_path) as transcript:
        audit.arm(launch.cwd)
        end = drive_claude(
            argv=launch.argv, confined=spawn, env=launch.environment.as_dict(), cwd=launch.cwd, session=session,
            opening=tuple(effect for effect in opening if not isinstance(effect, EventValue)),
            write_event=audit.write_event, transcript=transcript,
            commands=sys.stdin.fileno() if sys.stdin is not None else None, on_steering_refusal=stderr_line,
            late_events=lambda: late(transcript.late_events()),
            alerts=None if proxy is None else (proxy.alert_fd, lambda: expired_events(proxy)),
        )  # fmt: skip
    return msgspec.structs.replace(end, lost_record=transcript.refusal())


def run_claude(options: RunOptions, inputs: ClaudeInputs) -> int:
    """Run ``options`` (through stages 1–7, ``inputs`` what stages 5–7 gathered) from stage 8 on; the exit code of
    docs/hermetic.md#exit-codes."""
    return run_kind(options, partial(_staged, inputs))
