"""``metaharness run gemini``: stages 5–9 of docs/hermetic.md#refusal-order, the live loop and the wind-up
(docs/adapters/gemini.md; docs/adapters/common.md#vendor-launch-order, #vendor-decisions).

Facts are gathered here (the caller's environment, the ``--context`` files, the frame, the memory walk, what
the work tree holds, PATH candidates) and handed to the pure planner; the first refusal stops the run before
anything starts, and the scratch root is removed again.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import partial

import msgspec

from metaharness.pure.budgets import HOOK_TIMEOUT_S, SLOW_PROBE_S
from metaharness.pure.confinement import confined_hermetic
from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import EnvironmentDeclaration, path_floor
from metaharness.pure.events import Transcript
from metaharness.pure.frames import Frame
from metaharness.pure.gemini.adapter import KIND, LOOPBACK, PINS, PROGRAM, endpoint_paths
from metaharness.pure.gemini.doctor import version_token
from metaharness.pure.gemini.launch import GeminiLaunch, GeminiRunSpec, plan_gemini_launch
from metaharness.pure.gemini.record import RecordFacts
from metaharness.pure.gemini.session import open_session
from metaharness.pure.hermetic import MEMORY_SHAPES, DirectoryIdentity, VerdictFacts, memory_walk
from metaharness.pure.loopback import loopback_placeholder, upstream_root
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.pure.route_target import BridgeEndpoint, LoopbackPort, route_target
from metaharness.pure.run_end import RunEnd
from metaharness.pure.run_stages import decision_budget_ms, strict_version_refusal
from metaharness.shell.confinement import ConfinedSpawn, Prepared, confine
from metaharness.shell.facts import caller_environment, gather_memory_facts, gather_program_candidates, probe_stdout
from metaharness.shell.gemini.config_home import config_home_effect
from metaharness.shell.gemini.inputs import GeminiInputs
from metaharness.shell.gemini.live import drive_gemini
from metaharness.shell.gemini.version_probe import VersionProbe
from metaharness.shell.hook_channel import HookChannel
from metaharness.shell.run_engine import (
    LateEvents,
    Launched,
    LoopbackRoute,
    RunHold,
    refuse_if,
    run_kind,
    start_route_proxy,
    start_route_refused,
)
from metaharness.shell.staging import EarlySignal, Refused, stderr_line, take
from metaharness.shell.tree_facts import directory_identity, memory_walk_of
from metaharness.shell.wind_up import RunAudit


def workspace_entries(cwd: str | None) -> tuple[str, ...]:
    """The names in the work tree that decide its refusals (its own ``.gemini``), found without following
    a link (``lstat``): a link named ``.gemini`` counts as one."""
    if cwd is None:
        return ()
    try:
        os.lstat(os.path.join(cwd, ".gemini"))
    except OSError:
        return ()
    return (".gemini",)


class Custody(msgspec.Struct, frozen=True):
    """A loopback run's custody: the ``.env`` the proxy reads the key from, the child's placeholder, the proxy's
    port."""

    path: str
    placeholder: str
    port: str


def plan(options: RunOptions, scratch: str, context: tuple[ContextFileRead, ...], frame: Frame | None,
         hook_timeout_s: int | None = None, custody: Custody | None = None) -> GeminiLaunch:  # fmt: skip
    """Stages 5, 7 and 8 for a gemini run (docs/hermetic.md#refusal-order); raises ``Refused``."""
    caller_env = caller_environment()
    cwd = os.path.abspath(options.cwd) if options.cwd is not None else None
    walk = memory_walk_of(cwd, MEMORY_SHAPES[KIND])
    spec = GeminiRunSpec(
        prompt=options.prompt or "", decisions=options.decisions, hermetic=options.hermetic, model=options.model,
        cwd=cwd, scratch_cwd=options.scratch_cwd,
        environment=EnvironmentDeclaration(
            kind=KIND, credentials=options.credentials, actor=options.actor, model_endpoint=options.model_endpoint,
            loopback_port=None if custody is None else custody.port,
            loopback_placeholder=None if custody is None else custody.placeholder),
        context=context, frame_digest=frame.digest if frame is not None else None, hook_timeout_s=hook_timeout_s,
    )  # fmt: skip
    facts = gather_program_candidates(PROGRAM, path_floor(caller_env))
    upstream = None if custody is None else upstream_root(LOOPBACK, options.model_endpoint)
    return take(plan_gemini_launch(spec, caller_env, scratch, facts, walk=walk, workspace_entries=workspace_entries(cwd),
                                   custody_path=None if custody is None else custody.path, upstream=upstream))


def materialise(launch: GeminiLaunch) -> HookChannel:
    """Write the scratch tree: directories 0700, the settings file and the hook program (created, never
    opened through an existing name), and the hook channel."""
    for directory in launch.directories:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    for item in launch.files:
        descriptor = os.open(item.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, item.mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(item.data)
    return HookChannel.create(launch.scratch)


def probe_version(launch: GeminiLaunch) -> str | None:
    """``gemini --version`` in the constructed environment: its first token starting with a digit, or ``None``
    when it could not be run or printed none (the record states no version, so every run probes)."""
    banner = probe_stdout([launch.program, "--version"], launch.environment.as_dict(), timeout_s=SLOW_PROBE_S,
                          cwd=launch.cwd)  # fmt: skip
    return None if banner is None else version_token(banner)


def retained_files(launch: GeminiLaunch) -> tuple[tuple[str, str], ...]:
    """What ``--retain-dir`` keeps of a gemini run: the stream-json record, the hook requests and the generated
    settings (never a credential: the settings name none)."""
    return (
        (launch.transcript, os.path.basename(launch.transcript)),
        (os.path.join(launch.scratch, "hook-channel", "requests"), "hook-requests"),
        *((item.path, os.path.basename(item.path)) for item in launch.files),
    )


def verdict_facts(options: RunOptions, launch: GeminiLaunch, spawn: ConfinedSpawn | None) -> VerdictFacts:
    """What the rows of a gemini run are read against: the declared key, no MCP server, the pin, and by effect
    (docs/hermetic.md#by-effect) what the scratch ``GEMINI_CLI_HOME`` holds and where the confined harness ran."""
    return VerdictFacts(kind=KIND, declared_plugins=(), declared_key=options.credentials == "api-key",
                        planned_cwd=directory_identity(launch.cwd), pins=PINS, home_effect=config_home_effect(launch),
                        harness_cwd=harness_directory(spawn))  # fmt: skip


def harness_directory(spawn: ConfinedSpawn | None) -> DirectoryIdentity | None:
    """Where the confined harness ran, read from outside the view (row H7 by effect); ``None`` unconfined."""
    found = None if spawn is None else spawn.harness_cwd()
    return None if found is None else DirectoryIdentity(*found)


def confined_launch(prepared: Prepared | None, launch: GeminiLaunch) -> tuple[GeminiLaunch, ConfinedSpawn | None]:
    """The launch with rows H12 and H13, and its view when confined: writable the child's directory,
    ``GEMINI_CLI_HOME``, ``TMPDIR`` and the hook channel; the settings file and the hook program read-only,
    so no tool can rewrite what governs the run."""
    walk = memory_walk(*gather_memory_facts(launch.cwd, MEMORY_SHAPES[KIND]))
    spawn = None
    if prepared is not None:
        scratch = launch.scratch
        spawn = take(confine(
            prepared, program=launch.program, command=launch.argv, child_path=launch.environment.as_dict()["PATH"],
            scratch=scratch, cwd=launch.cwd,
            writable=(launch.cwd, launch.gemini_home, os.path.join(scratch, "tmp"), os.path.join(scratch, "hook-channel")),
            governing=tuple(item.path for item in launch.files),
        ))  # fmt: skip
    loopback = launch.environment.posture.loopback
    hermetic = confined_hermetic(launch.hermetic, None if spawn is None else spawn.confinement, loopback, KIND, walk)
    return msgspec.structs.replace(launch, hermetic=hermetic), spawn


def routed_plan(options: RunOptions, prepared: Prepared | None, custody: str | None, hold: RunHold,
                context: tuple[ContextFileRead, ...], frame: Frame | None,
                hook_timeout_s: int | None) -> GeminiLaunch:  # fmt: skip
    """Stages 7–8 with the route, its proxy kept in ``hold``: under loopback the proxy listens on a loopback port
    and the child holds a placeholder; a confined run needs ``--model-endpoint`` (``confine-route-unavailable``),
    its proxy listens on the scratch socket and the child is pointed at the bridge in the endpoint's place."""
    scratch = hold.scratch or ""
    if custody is not None:
        return loopback_plan(options, custody, prepared, hold, context, frame, hook_timeout_s)
    launch = plan(options, scratch, context, frame, hook_timeout_s)
    if prepared is None:
        return launch
    if options.model_endpoint is None:
        raise Refused(Refusal("confine-route-unavailable", f"--confine on {KIND} needs --credentials none with "
                              "--model-endpoint, or loopback: the view has no route to Google's API; pass "
                              "--confine off"))  # fmt: skip
    hold.proxy = start_route_refused(KIND, prepared, scratch, None)
    target = route_target(loopback=False, confined=True, model_endpoint=options.model_endpoint, proxy_port=None)
    assert isinstance(target, BridgeEndpoint)
    return plan(msgspec.structs.replace(options, model_endpoint=target.endpoint), scratch, context, frame,
                hook_timeout_s)  # fmt: skip


def loopback_plan(options: RunOptions, path: str, prepared: Prepared | None, hold: RunHold,
                  context: tuple[ContextFileRead, ...], frame: Frame | None,
                  hook_timeout_s: int | None) -> GeminiLaunch:  # fmt: skip
    """The loopback launch: the proxy (on ``127.0.0.1``, or on the scratch socket behind the bridge when confined)
    admitting only the run's model's methods and carrying the custody key as ``x-goog-api-key``."""
    scratch = hold.scratch or ""
    placeholder = loopback_placeholder(hold.run_id, os.urandom(12))
    route = LoopbackRoute(LOOPBACK, placeholder, path, upstream_root(LOOPBACK, options.model_endpoint),
                          endpoint_paths(options.model))  # fmt: skip
    proxy = start_route_proxy(hold, KIND, prepared, placeholder, route)
    assert proxy is not None
    target = route_target(loopback=True, confined=prepared is not None, model_endpoint=options.model_endpoint,
                          proxy_port=proxy.port)  # fmt: skip
    assert isinstance(target, LoopbackPort)
    return plan(options, scratch, context, frame, hook_timeout_s, Custody(path, placeholder, target.port))


def _staged(
    inputs: GeminiInputs, options: RunOptions, hold: RunHold, early: EarlySignal, hook_timeout_s: int | None
) -> Launched:
    """Stages 7–9 of a gemini run, after its stages 5–6 (``inputs``): the audit, the plan with its route, the
    scratch tree and the hook channel, the probe (beside the spawn when confined without ``--strict-version``:
    docs/adapters/gemini.md#version-probe), the view (the engine checks the endpoint)."""
    audit = RunAudit(options)
    early.check()
    custody, prepared, context, frame = inputs.custody, inputs.prepared, inputs.context, inputs.frame
    hold.scratch_root("metaharness-gemini-")
    launch = routed_plan(options, prepared, custody, hold, context, frame, hook_timeout_s)
    channel = materialise(launch)
    beside = prepared is not None and not options.strict_version
    version = None if beside else probe_version(launch)
    if options.strict_version:
        refuse_if(strict_version_refusal(launch.program, version, PINS))
    launch, spawn = confined_launch(prepared, launch)
    timeout = HOOK_TIMEOUT_S if hook_timeout_s is None else hook_timeout_s
    return Launched(
        audit=audit, program=launch.program, scratch=launch.scratch, spawn=spawn, record=launch.transcript,
        retained=retained_files(launch), verdict_facts=partial(verdict_facts, options, launch, spawn),
        drive=partial(_drive, options, audit, launch, (frame, channel, version, spawn), (hold.run_id, timeout),
                      partial(VersionProbe.start, launch) if beside else None),
        close=channel.close,
    )  # fmt: skip


def _drive(
    options: RunOptions, audit: RunAudit, launch: GeminiLaunch,
    held: tuple[Frame | None, HookChannel, str | None, ConfinedSpawn | None], run: tuple[str, int],
    probe: Callable[[], VersionProbe | None] | None, late: LateEvents,
) -> RunEnd:  # fmt: skip
    """``gemini -p`` on its stream-json record, answers through the hook channel (``run``: its id and the hook's
    timeout); ``probe`` starts the version probe beside the spawn (a confined run without ``--strict-version``)."""
    frame, channel, version, spawn = held
    run_id, timeout = run
    facts = RecordFacts(transcript=Transcript(path=launch.transcript, digest=None, bytes=None), hermetic=launch.hermetic,
                        context_files=launch.context_files, cwd=launch.cwd,
                        model=launch.args[launch.args.index("--model") + 1], harness_version=version)  # fmt: skip
    session = open_session(facts, run_id, options.decisions, frame, timeout)
    with open(launch.transcript, "wb") as transcript:
        audit.arm(launch.cwd)
        return drive_gemini(
            launch=launch, session=session, channel=channel, write_event=audit.write_event, transcript=transcript,
            commands=sys.stdin.fileno() if sys.stdin is not None else None, on_steering_refusal=stderr_line,
            late_events=lambda: late(()), confined=spawn, probe=probe,
        )  # fmt: skip


def run_gemini(options: RunOptions, inputs: GeminiInputs, hook_timeout_s: int | None = None) -> int:
    """Run ``options`` (through stages 1–6, ``inputs`` what stages 5–6 gathered) from stage 7 on; the exit code of
    docs/hermetic.md#exit-codes.
    ``hook_timeout_s`` shortens the hook's timeout (tests only); else ``--decision-deadline`` sets it
    (docs/decisions.md#deadlines)."""
    if hook_timeout_s is None and options.decision_deadline is not None:
        hook_timeout_s = decision_budget_ms(options.decision_deadline, HOOK_TIMEOUT_S * 1000) // 1000
    return run_kind(options, partial(_staged, inputs, hook_timeout_s=hook_timeout_s))
