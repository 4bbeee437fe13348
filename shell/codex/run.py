"""``metaharness run codex`` from stage 5 on (docs/hermetic.md#refusal-order,
docs/adapters/common.md#vendor-launch-order; docs/adapters/codex.md; docs/adapters/common.md#endpoint-route).

Gathers the facts the pure stages decide over (the caller's environment, credential files, the
``--context`` files, the frame, the memory walk, PATH candidates), plans the launch, writes the
scratch tree, probes under ``--strict-version``, drives the live loop and winds up: the retained
copies, the scratch root removed, the exit of docs/hermetic.md#exit-codes.
"""

from __future__ import annotations

import os
import shutil
import sys
from functools import partial

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.budgets import HOOK_TIMEOUT_S, SLOW_PROBE_S
from metaharness.pure.catalogue import Catalogue
from metaharness.pure.codex.adapter import LOOPBACK
from metaharness.pure.codex.app_server import CATALOGUE_COPY, app_server_args, catalogue_server_args
from metaharness.pure.codex.doctor import version_token
from metaharness.pure.codex.launch import CodexLaunch, CodexRunSpec, plan_codex_launch
from metaharness.pure.codex.rollout import RolloutLaunch
from metaharness.pure.codex.skills import SKILL_FILE, skill_roots
from metaharness.pure.codex.vendor import HONOURED_COMMANDS, KIND, PINS, PROGRAM, WIRE_PATHS
from metaharness.pure.commands import control_unsupported, start_time_refusals
from metaharness.pure.confinement import bridged_environment, confined_hermetic
from metaharness.pure.decisions import open_desk
from metaharness.pure.environment import (
    EnvironmentDeclaration,
    operator_login_file,
    path_floor,
)
from metaharness.pure.events import Transcript
from metaharness.pure.frames import Frame
from metaharness.pure.hermetic import MEMORY_SHAPES, VerdictFacts, memory_walk
from metaharness.pure.loopback import (
    SYMBOLIC_PORT,
    loopback_placeholder,
    upstream_root,
)
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.pure.route_target import BridgeEndpoint, LoopbackPort, VendorAtBridge, route_target
from metaharness.pure.run_end import RunEnd
from metaharness.pure.run_stages import decision_budget_ms, strict_version_refusal
from metaharness.shell.codex.config_home import config_home_effect
from metaharness.shell.codex.inputs import CodexInputs, declared_inputs
from metaharness.shell.codex.live import SUB_AGENT_COPIES, drive_codex
from metaharness.shell.confinement import ConfinedSpawn, Prepared, confine
from metaharness.shell.facts import (
    caller_environment,
    gather_memory_facts,
    gather_program_candidates,
    own_cli,
    probe_stdout,
    readable_regular_file,
)
from metaharness.shell.run_engine import LateEvents, Launched, LoopbackRoute, RunHold, run_kind, start_route_proxy
from metaharness.shell.staging import EarlySignal, stderr_line, take
from metaharness.shell.tree_facts import directory_identity, memory_walk_of, special_entry_refusal
from metaharness.shell.wind_up import RunAudit


def plan_run(
    options: RunOptions,
    scratch: str,
    loopback: tuple[str, str, str] | None = None,
    catalogue: Catalogue | None = None,
) -> Result[tuple[CodexLaunch, Frame | None], Refusal]:
    """Stages 5–8 for a codex run: every check before anything is written (docs/hermetic.md#refusal-order).
    ``loopback`` is (custody path, placeholder, port) under ``--credentials loopback``; the port may
    still be symbolic. ``catalogue`` is the checked catalogue of a catalogue run (H10 names its copy)."""
    caller_env = caller_environment()
    credential_file = operator_login_file(KIND, caller_env)
    inputs = declared_inputs(options)
    if isinstance(inputs, Failure):
        return inputs
    cwd, context, frame = inputs.unwrap()
    unusable = next((d for d in options.plugin_dir if not _usable_plugin_dir(d)), None)
    if unusable is not None:
        return Failure(
            Refusal("plugin-dir-unusable", f"--plugin-dir {unusable} is not a directory holding a readable file")
        )
    if (special := special_entry_refusal(options.plugin_dir)) is not None:
        return Failure(special)
    walk = memory_walk_of(cwd, MEMORY_SHAPES[KIND])
    refused = start_time_refusals(options.decisions, frame is not None, KIND, HONOURED_COMMANDS)
    if refused:
        return Failure(control_unsupported(refused))
    spec = CodexRunSpec(
        prompt=options.prompt or "",
        decisions=options.decisions,
        hermetic=options.hermetic,
        model=options.model,
        effort=options.effort,
        cwd=cwd,
        scratch_cwd=options.scratch_cwd,
        environment=EnvironmentDeclaration(
            kind=KIND,
            credentials=options.credentials,
            actor=options.actor,
            model_endpoint=options.model_endpoint,
            loopback_port=loopback[2] if loopback is not None else None,
            loopback_placeholder=loopback[1] if loopback is not None else None,
        ),
        context=context,
        frame_digest=frame.digest if frame is not None else None,
        catalogue=catalogue,
        hook_timeout_s=decision_budget_ms(options.decision_deadline, HOOK_TIMEOUT_S * 1000) // 1000,
    )
    program_facts = gather_program_candidates(PROGRAM, path_floor(caller_env))
    launch = plan_codex_launch(
        spec,
        caller_env,
        scratch,
        program_facts,
        credential_file_present=readable_regular_file(credential_file),
        custody_path=loopback[0] if loopback is not None else None,
        upstream=upstream_root(LOOPBACK, options.model_endpoint) if loopback is not None else None,
        walk=walk,
        skills=found_skills(caller_env.get("HOME"), cwd, confined=options.confine == "on"),
    )
    return launch.map(lambda planned: (planned, frame))


def found_skills(home: str | None, cwd: str | None, confined: bool = False) -> tuple[str, ...]:
    """The ``SKILL.md`` files under the pinned Codex's skill roots for a run in ``cwd`` (``None``: the
    scratch work directory), sorted within each root; in a ``confined`` view, only the roots it holds. Listed by
    name before the launch, while no child runs."""
    start = os.path.realpath(cwd) if cwd is not None else None
    found: list[str] = []
    for root in skill_roots(home, start, _repository_root(start), confined):
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        found += [os.path.join(root, name, SKILL_FILE) for name in names]
    return tuple(path for path in found if os.path.isfile(path))


def _repository_root(directory: str | None) -> str | None:
    """The nearest of ``directory`` and its ancestors that holds ``.git``, or ``None``."""
    while directory is not None:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        directory = None if parent == directory else parent
    return None


def _usable_plugin_dir(directory: str) -> bool:
    """An existing directory, not a symlink, holding at least one readable regular file (docs/adapters/claude.md):
    the operator's tree, walked by name before the launch, while no child runs."""
    if os.path.islink(directory) or not os.path.isdir(directory):
        return False
    return any(
        os.path.isfile(os.path.join(base, name)) and os.access(os.path.join(base, name), os.R_OK)
        for base, _, names in os.walk(directory)
        for name in names
    )


def _symlinks(base: str, names: list[str]) -> list[str]:
    return [name for name in names if os.path.islink(os.path.join(base, name))]


def materialise(launch: CodexLaunch, plugin_dirs: tuple[str, ...] = ()) -> None:
    """Write the scratch tree (directories 0700, files with their modes), copy each ``--plugin-dir``
    to ``codex-home/plugins/<name>/`` (symlinks skipped; loading unverified) and ``auth.json`` under
    operator-login, immediately before the spawn (docs/adapters/codex.md)."""
    for directory in launch.directories:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    for source in plugin_dirs:
        name = os.path.basename(os.path.normpath(source))
        shutil.copytree(source, os.path.join(launch.codex_home, "plugins", name), dirs_exist_ok=True, ignore=_symlinks)
    for item in launch.files:
        descriptor = os.open(item.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, item.mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(item.data)
        os.chmod(item.path, item.mode)
    if launch.credential_file is not None:
        copy = os.path.join(launch.codex_home, "auth.json")
        shutil.copyfile(launch.credential_file, copy)
        os.chmod(copy, 0o600)


def probe_version(launch: CodexLaunch) -> str | None:
    """``codex --version`` in the constructed environment: the first token starting with a digit
    (docs/adapters/common.md#pins), or ``None`` when it could not be run or printed none."""
    banner = probe_stdout([launch.program, "--version"], launch.environment.as_dict(), timeout_s=SLOW_PROBE_S,
                          cwd=launch.cwd)  # fmt: skip
    return None if banner is None else version_token(banner)


def strict_version(launch: CodexLaunch) -> Result[str, Refusal]:
    """``--strict-version`` (docs/adapters/common.md#pins): the probed version, or ``version-unreadable`` /
    ``version-off-pin`` naming both versions."""
    version = probe_version(launch)
    refusal = strict_version_refusal(launch.program, version, PINS)
    if refusal is not None:
        return Failure(refusal)
    return Success(str(version))


def retained_files(launch: CodexLaunch) -> tuple[tuple[str, str], ...]:
    """What ``--retain-dir`` keeps of a codex run: the rollout copies (the sub-agents' too), the hook requests,
    ``loopback.json``, the catalogue copy and the generated config, never a credential (docs/cli.md#run)."""
    names = ("rollout.jsonl", "rollout.stdout.jsonl", SUB_AGENT_COPIES, "loopback.json", "catalogue.json", "hooks",
             "hook-channel")
    return (
        *((os.path.join(launch.scratch, name), name) for name in names),
        (os.path.join(launch.codex_home, "config.toml"), os.path.join("codex-home", "config.toml")),
    )


def verdict_facts(options: RunOptions, launch: CodexLaunch) -> VerdictFacts:
    """What the rows of a codex run are read against (docs/hermetic.md#verdicts, docs/hermetic.md#attestation): the
    plugin copies' names, the declared key, an empty MCP set (the scratch config names no server), the pins, and
    what the scratch ``CODEX_HOME`` held after the session (docs/hermetic.md#by-effect)."""
    return VerdictFacts(
        kind=KIND,
        declared_plugins=tuple(os.path.basename(os.path.normpath(source)) for source in options.plugin_dir),
        declared_key=options.credentials == "api-key",
        planned_cwd=directory_identity(launch.cwd),
        pins=PINS,
        home_effect=config_home_effect(launch),
    )


Started = tuple[CodexLaunch, Frame | None, Catalogue | None, Prepared | None]


def _start(options: RunOptions, inputs: CodexInputs, run: str, hold: RunHold) -> Result[Started, Refusal]:
    """Stages 6–9 (c) after stages 5–6 (``inputs``): plan, start the route proxy (loopback, or any route of a confined
    run) into ``hold`` and re-plan pointed at it."""
    scratch = hold.scratch or ""
    path, prepared, catalogue = inputs.custody, inputs.prepared, inputs.catalogue
    loopback = None if path is None else (path, loopback_placeholder(run, os.urandom(12)), SYMBOLIC_PORT)
    planned = plan_run(options, scratch, loopback, catalogue)
    route = None if prepared is None else prepared.route
    if isinstance(planned, Failure) or (loopback is None and route is None):
        return planned.map(lambda done: (*done, catalogue, prepared))
    proxy = start_route_proxy(
        hold, KIND, prepared, None if loopback is None else loopback[1],
        None if loopback is None else LoopbackRoute(LOOPBACK, loopback[1], loopback[0],
                                                    upstream_root(LOOPBACK, options.model_endpoint), WIRE_PATHS),
    )  # fmt: skip
    assert proxy is not None
    target = route_target(loopback=loopback is not None, confined=prepared is not None,
                          model_endpoint=options.model_endpoint, proxy_port=proxy.port)  # fmt: skip
    match target:
        case LoopbackPort(port=port):
            assert loopback is not None
            replanned = plan_run(options, scratch, (loopback[0], loopback[1], port), catalogue)
        case BridgeEndpoint(endpoint=endpoint):
            replanned = plan_run(msgspec.structs.replace(options, model_endpoint=endpoint), scratch, None, catalogue)
        case VendorAtBridge():
            replanned = planned.map(lambda done: (_at_bridge(done[0]), done[1]))
    return replanned.map(lambda done: (*done, catalogue, prepared))


def _at_bridge(launch: CodexLaunch) -> CodexLaunch:
    """A codex launch on the vendor's API pointed at the bridge instead (``OPENAI_BASE_URL``)."""
    return msgspec.structs.replace(launch, environment=bridged_environment(KIND, launch.environment))


def confined_launch(
    prepared: Prepared | None,
    launch: CodexLaunch,
    command: tuple[str, ...],
    plugin_dirs: tuple[str, ...],
    server: tuple[str, ...] = (),
) -> Result[tuple[CodexLaunch, ConfinedSpawn | None, ConfinedSpawn | None], Refusal]:
    """The launch with rows H12 and H13, and the view of ``command`` when confined: writable the
    child's directory, CODEX_HOME, TMPDIR and the hook channel; the generated files, the credential
    copy and the plugin copies read-only. A catalogue ``server`` argv gets a view of its own, without
    the route."""
    loopback = launch.environment.posture.loopback
    if prepared is None:
        return Success((msgspec.structs.replace(launch, hermetic=confined_hermetic(launch.hermetic, None, loopback,
                                                                                  KIND)), None, None))  # fmt: skip
    walk = memory_walk(*gather_memory_facts(launch.cwd, MEMORY_SHAPES[KIND]))
    scratch = launch.scratch
    names = (os.path.basename(os.path.normpath(source)) for source in plugin_dirs)
    credential = [os.path.join(launch.codex_home, "auth.json")] if launch.credential_file else []
    def view(argv: tuple[str, ...], route: Prepared) -> Result[ConfinedSpawn, Refusal]:
        return confine(
            route, program=launch.program, command=argv, child_path=launch.environment.as_dict()["PATH"],
            scratch=scratch, cwd=launch.cwd,
            writable=(launch.cwd, launch.codex_home, os.path.join(scratch, "tmp"), os.path.join(scratch, "hook-channel")),
            governing=(*(item.path for item in launch.files), *credential, *plugins,
                       os.path.join(scratch, CATALOGUE_COPY)),
        )  # fmt: skip

    plugins = tuple(os.path.join(launch.codex_home, "plugins", name) for name in names)
    spawned = view(command, prepared)
    if isinstance(spawned, Failure):
        return spawned
    spawn = spawned.unwrap()
    served = view(server, msgspec.structs.replace(prepared, route=None)) if server else None
    if isinstance(served, Failure):
        return served
    hermetic = confined_hermetic(launch.hermetic, spawn.confinement, loopback, KIND, walk)
    return Success((msgspec.structs.replace(launch, hermetic=hermetic), spawn,
                    None if served is None else served.unwrap()))  # fmt: skip


def _staged(inputs: CodexInputs, options: RunOptions, hold: RunHold, early: EarlySignal) -> Launched:
    """Stages 6–9 of a codex run after its stages 5–6 (``inputs``): the scratch root, the audit, the plan and the
    route (:func:`_start`), the scratch tree, the probe, the catalogue's copy, the view of the command (and of the
    catalogue server); the engine checks the endpoint."""
    hold.scratch_root("metaharness-codex-")
    audit = RunAudit(options)
    launch, frame, catalogue, prepared = take(_start(options, inputs, hold.run_id, hold))
    early.check()
    materialise(launch, options.plugin_dir)
    if options.strict_version:
        take(strict_version(launch))
    if catalogue is not None:
        # app-server's modules (and the metadata read of its version) load only for a catalogue run
        from metaharness.shell.codex.app_server import place_catalogue

        take(place_catalogue(launch, catalogue, options.catalogue or "", proxy_started=hold.proxy is not None,
                             probed=options.strict_version))  # fmt: skip
    command = launch.argv if catalogue is None else (launch.program, *app_server_args())
    server = () if catalogue is None else catalogue_server_args(own_cli(), launch.scratch, launch.cwd, catalogue)
    launch, spawn, spawn_server = take(confined_launch(prepared, launch, command, options.plugin_dir, server))
    return Launched(
        audit=audit, program=launch.program, scratch=launch.scratch, spawn=spawn, record=launch.rollout_copy,
        retained=retained_files(launch), verdict_facts=partial(verdict_facts, options, launch),
        drive=partial(_drive, options, audit, launch, (frame, catalogue, spawn, spawn_server), hold.run_id),
    )  # fmt: skip


def _drive(
    options: RunOptions, audit: RunAudit, launch: CodexLaunch,
    held: tuple[Frame | None, Catalogue | None, ConfinedSpawn | None, ConfinedSpawn | None], run_id: str,
    late: LateEvents,
) -> RunEnd:  # fmt: skip
    """``codex exec`` on its rollout, or the app-server with the catalogue; answers through the hook channel."""
    frame, catalogue, spawn, spawn_server = held
    rollout = RolloutLaunch(
        program=launch.program, pins=PINS, transcript=Transcript(path=launch.rollout_copy, digest=None, bytes=None),
        hermetic=launch.hermetic, context_files=launch.context_files,
        frame_digest=frame.digest if frame is not None else None, tmpdir=launch.environment.as_dict().get("TMPDIR"),
    )  # fmt: skip
    desk = open_desk(options.decisions, frame, decision_budget_ms(options.decision_deadline, HOOK_TIMEOUT_S * 1000))
    drive = drive_codex
    if catalogue is not None:
        from metaharness.shell.codex.app_server import drive_app_server

        drive = partial(drive_app_server, catalogue=catalogue, model=options.model, confined_server=spawn_server)
    audit.arm(launch.cwd)
    return drive(
        launch=launch, desk=desk, rollout=rollout, run=run_id, write_event=audit.write_event,
        commands=sys.stdin.fileno() if sys.stdin is not None else None, on_steering_refusal=stderr_line,
        late_events=lambda: late(()), confined=spawn,
    )  # fmt: skip


def run_codex(options: RunOptions, inputs: CodexInputs) -> int:
    """Run ``options`` (kind ``codex``, through stages 1–6, ``inputs`` what stages 5–6 gathered) on; the exit of
    docs/hermetic.md#exit-codes."""
    return run_kind(options, partial(_staged, inputs))
