"""``metaharness run b10x``: stages 5–9 of docs/hermetic.md#refusal-order, the live loop and the wind-up
(docs/adapters/b10x.md).

Facts are gathered here and handed to the pure stages in the order of docs/hermetic.md#refusal-order; the first refusal
stops the run before anything starts (the scratch root, once created, is removed again).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import partial

import msgspec
from returns.result import Failure, Result

from metaharness.pure.b10x.launch import (
    B10xLaunch,
    B10xLaunchFacts,
    child_path,
    declared_files,
    launch_model,
    plan_b10x_launch,
    resolve_b10x_program,
    session_bus,
    verified_versions,
    version_token,
)
from metaharness.pure.b10x.loop_flags import loop_flag_refusal, tier_flags
from metaharness.pure.b10x.seam import SeamSettings, unverified_tier, version_off_pin
from metaharness.pure.b10x.vendor import KIND, PROGRAM
from metaharness.pure.bounds import HOOKS_FILE_LIMIT, PLUGIN_MANIFEST_LIMIT
from metaharness.pure.budgets import PROBE_S, VENDOR_BUDGET_MS
from metaharness.pure.confinement import bridge_url, confined_hermetic, tool_entry_environment
from metaharness.pure.events import Transcript, WarningRaised
from metaharness.pure.frames import Frame
from metaharness.pure.hermetic import MEMORY_SHAPES, MemoryWalk, VerdictFacts
from metaharness.pure.loop.hooks import parse_hooks
from metaharness.pure.loop.skills import PLUGIN_MANIFEST, plugin_name
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_end import RunEnd
from metaharness.pure.run_stages import decision_budget_ms, strict_version_refusal
from metaharness.shell.b10x.inputs import B10xInputs
from metaharness.shell.b10x.live import drive_loop
from metaharness.shell.b10x.own_loop import own_loop_version
from metaharness.shell.bounded_reads import read_regular
from metaharness.shell.child_tree import ChildDir
from metaharness.shell.confinement import ConfinedSpawn, Prepared, confine, program_reads
from metaharness.shell.facts import gather_program_candidates
from metaharness.shell.run_engine import (
    LateEvents,
    Launched,
    RunHold,
    refuse_if,
    run_kind,
    start_route_refused,
)
from metaharness.shell.staging import (
    EarlySignal,
    stderr_line,
    take,
)
from metaharness.shell.transcript_copy import TranscriptCopy
from metaharness.shell.tree_facts import directory_identity, memory_walk_of
from metaharness.shell.wind_up import RunAudit


def materialise(launch: B10xLaunch) -> None:
    """Write the scratch tree (docs/adapters/b10x.md#scratch-layout): directories 0700, context copies 0600,
    plugin copies."""
    for directory in launch.directories:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    for copy in launch.files:
        os.makedirs(os.path.dirname(copy.destination), mode=0o700, exist_ok=True)
        descriptor = os.open(copy.destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL, copy.mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(copy.data)
    for plugin in launch.plugin_copies:
        shutil.copytree(plugin.source, plugin.copy, symlinks=True)


class LaunchProbe:
    """``<program> *args`` with the child's environment, the scratch config home and a 10 s limit,
    started at once and read when its answer is needed."""

    def __init__(self, launch: B10xLaunch, *args: str) -> None:
        try:
            self.process: subprocess.Popen[bytes] | None = subprocess.Popen(
                [launch.program, *args],
                env=launch.environment.as_dict(),
                cwd=launch.scratch,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            self.process = None

    def stdout(self) -> str | None:
        """What it printed, or ``None`` when it could not run or timed out."""
        if self.process is None:
            return None
        try:
            out, _ = self.process.communicate(timeout=PROBE_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
            return None
        return out.decode("utf-8", "replace")


class VersionProbe(LaunchProbe):
    """``<program> --version``."""

    def __init__(self, launch: B10xLaunch) -> None:
        super().__init__(launch, "--version")

    def version(self) -> str | None:
        """The version token, or ``None`` when the probe could not run, timed out or named none."""
        banner = self.stdout()
        return version_token(banner) if banner is not None else None


def plan_warnings(
    options: RunOptions, launch: B10xLaunch, version: str | None, pins: tuple[str, ...]
) -> tuple[WarningRaised, ...]:
    """``VERSION_OFF_PIN`` from the probe, then ``UNVERIFIED_TIER`` under frame and ask
    (docs/adapters/b10x.md#program-and-version, #capabilities-and-doctor)."""
    found = version_off_pin(launch.program, version, pins)
    warnings = (found,) if found is not None else ()
    return warnings + ((unverified_tier(),) if options.decisions != "observe" else ())


def retained_files(launch: B10xLaunch) -> tuple[tuple[str, str], ...]:
    """What ``--retain-dir`` keeps of a b10x run: the raw record as ``loop.jsonl`` and the generated
    files at their places under the scratch root (docs/cli.md#run)."""
    generated = tuple((copy.destination, os.path.relpath(copy.destination, launch.scratch)) for copy in launch.files)
    return ((launch.transcript_path, "loop.jsonl"), *generated)


def memory_facts(options: RunOptions) -> MemoryWalk:
    """The ancestor walk's facts (docs/hermetic.md#memory-file-walk): from the temporary directory the scratch root will
    be created in, or from ``--cwd``."""
    return memory_walk_of(options.cwd, MEMORY_SHAPES[KIND])


def declared_plugin_name(copy: str) -> str:
    """The name the loop qualifies a plugin's skills and agents with: its scratch copy's
    ``.claude-plugin/plugin.json`` ``name``, else the copy's directory name. Read at the wind-up, from
    a copy the loop could reach, so through its descriptor (``metaharness.shell.child_tree``): a link,
    a FIFO or a file past ``PLUGIN_MANIFEST_LIMIT`` there names no plugin."""
    folder, name = os.path.split(PLUGIN_MANIFEST)
    fallback = os.path.basename(copy)
    try:
        root = ChildDir.open(copy)
    except OSError:
        return fallback
    try:
        raw = root.reach(folder).bind(partial(_manifest_bytes, name=name))
    finally:
        root.close()
    if isinstance(raw, Failure) or len(raw.unwrap()) > PLUGIN_MANIFEST_LIMIT:
        return fallback
    return plugin_name(os.path.join(copy, PLUGIN_MANIFEST), raw.unwrap()).value_or(fallback)


def _manifest_bytes(folder: ChildDir, name: str) -> Result[bytes, Refusal]:
    try:
        return folder.read(name, PLUGIN_MANIFEST_LIMIT + 1)
    finally:
        folder.close()


def verdict_facts(options: RunOptions, launch: B10xLaunch, pins: tuple[str, ...]) -> VerdictFacts:
    """What the rows of a b10x run are read against: H1a compares the ``<plugin>:`` prefixes of the
    loop's skills and agents with the declared plugins' names (docs/loop-extensions.md)."""
    return VerdictFacts(
        kind=KIND,
        declared_plugins=tuple(declared_plugin_name(p.copy) for p in launch.plugin_copies),
        declared_key=options.credentials == "api-key",
        planned_cwd=directory_identity(launch.cwd),
        pins=pins,
    )


def hook_reads(launch: B10xLaunch) -> tuple[str, ...]:
    """What the view must hold for the ``--hooks`` programs (each command's program closure and the
    files it names); none when the file cannot be read or parsed, which the loop refuses at start."""
    child_path = launch.environment.as_dict()["PATH"]
    reads: list[str] = []
    for path in (value for flag, value in zip(launch.args, launch.args[1:], strict=False) if flag == "--hooks"):
        try:
            raw = read_regular(path, HOOKS_FILE_LIMIT)
        except OSError:
            continue
        for hook in parse_hooks(path, raw).value_or(()):
            reads += program_reads(hook.command, child_path)
    return tuple(reads)


def confined_launch(
    prepared: Prepared | None, launch: B10xLaunch, walk: MemoryWalk
) -> tuple[B10xLaunch, ConfinedSpawn | None]:
    """The launch with rows H12 and H13, and its view when confined (``confine-read-exposes``)."""
    spawn = None
    if prepared is not None:
        spawn = take(
            confine(
                prepared, program=launch.program, command=launch.argv, child_path=launch.environment.as_dict()["PATH"],
                scratch=launch.scratch, cwd=launch.cwd,
                writable=(launch.cwd, os.path.join(launch.scratch, "config")),
                governing=(*(copy.destination for copy in launch.files), *(p.copy for p in launch.plugin_copies)),
                sockets=session_bus(launch), inputs=(*declared_files(launch), *hook_reads(launch)),
            )
        )  # fmt: skip
        launch = msgspec.structs.replace(
            launch, environment=tool_entry_environment(KIND, launch.environment, spawn.confinement)
        )
    confinement = None if spawn is None else spawn.confinement
    hermetic = confined_hermetic(launch.attestation, confinement, loopback=False, kind=KIND, memory=walk)
    return msgspec.structs.replace(launch, attestation=hermetic), spawn


def _staged(inputs: B10xInputs, options: RunOptions, hold: RunHold, early: EarlySignal) -> Launched:
    """Stages 8–9 of a b10x run, after its stages 5–7 (``inputs``): the audit, the memory walk, the program, the
    plan, the scratch tree, the route, the view, the probes (the engine checks the endpoint)."""
    caller_env, caller_cwd, prepared, context, frame = (
        inputs.caller_env, inputs.caller_cwd, inputs.prepared, inputs.context, inputs.frame
    )  # fmt: skip
    audit = RunAudit(options)
    early.check()
    walk = memory_facts(options)
    program = take(resolve_b10x_program(caller_env, gather_program_candidates(PROGRAM, child_path(caller_env))))
    scratch = hold.scratch_root("metaharness-")
    facts = B10xLaunchFacts(caller_env=caller_env, caller_cwd=caller_cwd, scratch=scratch, program=program,
                            context=context, frame=frame, memory=walk)  # fmt: skip
    route = None if prepared is None else prepared.route
    planned = options if route is None else msgspec.structs.replace(
        options, model_endpoint=bridge_url(options.model_endpoint)
    )
    launch = take(plan_b10x_launch(planned, facts))
    materialise(launch)
    if prepared is not None:
        hold.proxy = start_route_refused(KIND, prepared, scratch, None)
    launch, spawn = confined_launch(prepared, launch, walk)
    pins = verified_versions(own_loop_version(launch.program))
    probe = VersionProbe(launch)
    flags = tier_flags(options)
    if flags:
        help_probe = LaunchProbe(launch, "run", "--help")
        refuse_if(loop_flag_refusal(flags, launch.program, probe.version(), help_probe.stdout()))
    if options.strict_version:
        refuse_if(strict_version_refusal(launch.program, probe.version(), pins))
    return Launched(
        audit=audit, program=launch.program, scratch=launch.scratch, spawn=spawn, record=launch.transcript_path,
        retained=retained_files(launch), verdict_facts=partial(verdict_facts, options, launch, pins),
        drive=partial(_drive, options, audit, launch, (frame, spawn, probe, pins), hold.run_id),
    )  # fmt: skip


def _drive(
    options: RunOptions, audit: RunAudit, launch: B10xLaunch,
    held: tuple[Frame | None, ConfinedSpawn | None, VersionProbe, tuple[str, ...]], run_id: str, late: LateEvents,
) -> RunEnd:  # fmt: skip
    """The loop on its record (``loop.jsonl``), answers on its stdin, the late warnings in its wind-up; the seam
    opens with the probed version and the plan-time warnings."""
    frame, spawn, probe, pins = held
    settings = SeamSettings(
        run=run_id, mode=options.decisions, model=launch_model(options), harness_version=None,
        transcript=Transcript(path=launch.transcript_path, digest=None, bytes=None),
        context_files=launch.context_files, hermetic=launch.attestation, frame=frame,
        vendor_budget_ms=decision_budget_ms(options.decision_deadline, VENDOR_BUDGET_MS),
    )  # fmt: skip

    def opened(settings: SeamSettings) -> tuple[SeamSettings, tuple[WarningRaised, ...]]:
        version = probe.version()
        warnings = plan_warnings(options, launch, version, pins)
        return msgspec.structs.replace(settings, harness_version=version), warnings

    with TranscriptCopy(launch.transcript_path) as transcript:
        audit.arm(launch.cwd)
        end = drive_loop(
            argv=launch.argv, confined=spawn, env=launch.environment.as_dict(), cwd=launch.cwd, settings=settings,
            opening=opened, write_event=audit.write_event, transcript=transcript, commands=sys.stdin.fileno(),
            on_steering_refusal=stderr_line,
            retain=lambda: tuple(e for e in late(transcript.late_events()) if isinstance(e, WarningRaised)),
        )  # fmt: skip
    return msgspec.structs.replace(end, lost_record=transcript.refusal())


def run_b10x(options: RunOptions, inputs: B10xInputs) -> int:
    """Run ``options`` (through stages 1–7, ``inputs`` what stages 5–7 gathered) from stage 8 on; the exit code of
    docs/hermetic.md#exit-codes."""
    return run_kind(options, partial(_staged, inputs))
