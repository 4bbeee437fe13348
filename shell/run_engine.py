"""The one run engine: stages 5–9 of docs/hermetic.md#refusal-order for every kind, around the kind's own part
(docs/DEVELOPING.md#the-run-engine).

The engine holds what every run shares: the early signals (``signalled``), the scratch root and the route
proxy a refusal or the wind-up releases, the audit's wiring (the program, the route and its witness, the
rows' facts with their effect checks), the wind-up's own events (the run's limits, the route's, the
``--retain-dir`` copies), a spawn that failed, an unexpected failure and the audited exit. A kind fills
:data:`Staging` (its stages, in its refusal order) and hands back a :class:`Launched` run (its record,
where its answers go, what it retains, its verdict facts and its live loop).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

import msgspec

from metaharness.pure.adapter import Loopback
from metaharness.pure.events import Event
from metaharness.pure.hermetic import VerdictFacts
from metaharness.pure.kind import Kind
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_end import RunEnd, spawn_failed
from metaharness.shell.child_end import end_unexpectedly
from metaharness.shell.child_tree import remove_tree
from metaharness.shell.confinement import ConfinedSpawn, Prepared, effect_checked
from metaharness.shell.loopback import RouteProxy
from metaharness.shell.refusals import refuse
from metaharness.shell.run_signals import spawned_group
from metaharness.shell.staging import EarlySignal, Refused, reach_endpoint
from metaharness.shell.view_route import start_route
from metaharness.shell.wind_up import RunAudit, retain_copies

LateEvents = Callable[[tuple[Event, ...]], tuple[Event, ...]]
"""The wind-up's own events, asked for once the child is reaped, with the loop's own (its record copy's) placed
after the run's limits'."""


class RunHold:
    """What a run has started before its child: its scratch root and its route proxy, released once
    (a refusal, or the end of the run)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.scratch: str | None = None
        self.proxy: RouteProxy | None = None

    def scratch_root(self, prefix: str) -> str:
        """A new scratch root (``mkdtemp``, 0700) under the temporary directory, removed at release."""
        self.scratch = tempfile.mkdtemp(prefix=prefix)
        return self.scratch

    def release(self) -> None:
        """Stop the proxy and remove the scratch root (through ``metaharness.shell.child_tree``), once."""
        proxy, scratch = self.proxy, self.scratch
        self.proxy = self.scratch = None
        if proxy is not None:
            proxy.stop()
        if scratch is not None:
            remove_tree(scratch)


def refuse_if(refusal: Refusal | None) -> None:
    """A stage's optional refusal raised as ``Refused``."""
    if refusal is not None:
        raise Refused(refusal)


def start_route_refused(kind: Kind, prepared: Prepared, scratch: str, placeholder: str | None) -> RouteProxy | None:
    """The confined view's route proxy on its scratch socket (``metaharness.shell.view_route.start_route``), or
    ``loopback-not-started`` when it cannot listen."""
    try:
        return start_route(kind, prepared, scratch, placeholder)
    except OSError as error:
        reason = error.strerror or error
        raise Refused(Refusal("loopback-not-started", f"the route proxy could not listen: {reason}")) from None


class LoopbackRoute(msgspec.Struct, frozen=True):
    """An unconfined loopback route: the dialect the proxy answers in, the placeholder the child holds, the custody
    file the proxy reads, the upstream it forwards to, the paths it admits and the words its ``loopback-not-started``
    refusal begins with."""

    dialect: Loopback
    placeholder: str
    custody: str
    upstream: str
    paths: tuple[str, ...]
    not_listening: str = "the route proxy could not listen:"


def start_route_proxy(
    hold: RunHold, kind: Kind, prepared: Prepared | None, placeholder: str | None, loopback: LoopbackRoute | None
) -> RouteProxy | None:
    """Stage 9 (a): the route proxy, kept in ``hold``: on the view's socket when confined (``placeholder``: the key
    the child holds under loopback), else on ``127.0.0.1`` for an unconfined ``loopback`` route, else none;
    ``loopback-not-started`` when it cannot listen."""
    if prepared is not None:
        hold.proxy = start_route_refused(kind, prepared, hold.scratch or "", placeholder)
        return hold.proxy
    if loopback is None:
        return None
    hold.proxy = RouteProxy(loopback.dialect, loopback.placeholder, loopback.custody, loopback.upstream, loopback.paths)
    try:
        hold.proxy.start()
    except OSError as error:
        refusal = Refusal("loopback-not-started", f"{loopback.not_listening} {error.strerror or error}")
        raise Refused(refusal) from None
    return hold.proxy


class Launched(msgspec.Struct, frozen=True, kw_only=True):
    """A kind's run once every stage passed, as the engine drives and winds it up: its audit, the program it starts,
    its scratch root, its view, the record the auditor reads, what ``--retain-dir`` keeps (source, name under the
    run's folder), the facts its rows are read against (before the effect checks, asked after the run), its live
    loop and what it releases beside the hold."""

    audit: RunAudit
    program: str
    scratch: str
    spawn: ConfinedSpawn | None
    record: str
    retained: tuple[tuple[str, str], ...]
    verdict_facts: Callable[[], VerdictFacts]
    drive: Callable[[LateEvents], RunEnd]
    """Spawn the child, run its live loop (arming the audit, every event through ``audit.write_event``) and wind
    its stream up with the late events; raises ``OSError`` when the spawn itself fails."""
    close: Callable[[], None] = lambda: None


Staging = Callable[[RunOptions, RunHold, EarlySignal], Launched]
"""A kind's stages 5–9: gather the facts, plan, write the scratch tree, confine and probe, in the kind's refusal
order; a refusal raises ``Refused``. What it starts it keeps in the hold. The engine then makes the last checks
before the spawn (the endpoint's pre-flight, a signal that arrived)."""


def run_kind(options: RunOptions, staging: Staging) -> int:
    """Run ``options`` (through stages 1–4) from stage 5 on with a kind's ``staging``; the exit code of
    docs/hermetic.md#exit-codes."""
    hold = RunHold(f"{options.kind}-{os.getpid()}")
    try:
        with EarlySignal() as early:
            try:
                launched = _staged_to_the_spawn(options, hold, early, staging)
            except Refused as refused:
                hold.release()
                return refuse(refused.refusal)
        return _live(options, hold, launched)
    finally:
        hold.release()


def _staged_to_the_spawn(options: RunOptions, hold: RunHold, early: EarlySignal, staging: Staging) -> Launched:
    """A kind's stages, then the last checks every kind makes before its spawn: ``endpoint-unreachable``
    (docs/cli.md#the-endpoint-pre-flight), then a signal that arrived meanwhile (``signalled``); a refusal there
    closes what the kind's staging opened."""
    launched = staging(options, hold, early)
    try:
        reach_endpoint(options)
        early.check()
    except Refused:
        launched.close()
        raise
    return launched


def _live(options: RunOptions, hold: RunHold, launched: Launched) -> int:
    """The live part: the audit wired to the launch, the loop driven, the exit audited; a spawn that failed is
    ``spawn-failed``, anything unexpected closes the stream ``error`` (``internal-error``)."""
    audit, proxy = launched.audit, hold.proxy
    audit.names_run(hold.run_id, launched.program)
    if proxy is not None and launched.spawn is not None:
        audit.route = lambda: proxy.route
    if proxy is not None:
        audit.account = lambda: proxy.account

    def rows_facts() -> VerdictFacts:
        """The facts the rows are checked against, with the effect checks read after the spawn."""
        return effect_checked(launched.verdict_facts(), launched.spawn)

    def late(own: tuple[Event, ...]) -> tuple[Event, ...]:
        limits = audit.limits.late_events()
        workspace = audit.workspace_diff()
        routed = () if proxy is None else proxy.wind_up(launched.scratch)
        kept = retain_copies(options.retain_dir, hold.run_id, launched.scratch, launched.retained, workspace)
        return (*limits, *own, *routed, *kept)

    audit.rows_facts = rows_facts
    try:
        return _ended(audit, launched, late, rows_facts)
    finally:
        launched.close()


def _ended(
    audit: RunAudit, launched: Launched, late: LateEvents, rows_facts: Callable[[], VerdictFacts]
) -> int:
    """The loop driven and the exit audited: a spawn that failed is ``spawn-failed``; anything unexpected
    (in the loop or the audit) closes the stream ``error`` with ``internal-error``."""
    try:
        end = launched.drive(late)
    except OSError as error:
        if spawned_group() is not None:
            return end_unexpectedly(audit, error)
        return refuse(spawn_failed(launched.program, str(error.strerror or error)))
    except Exception as error:  # noqa: BLE001 - the child is stopped and the stream closed whatever failed
        return end_unexpectedly(audit, error)
    if end.refusal is not None:
        return refuse(end.refusal)
    try:
        return audit.exit_code(rows_facts(), launched.record, end.reason, end.lost_record)
    except Exception as error:  # noqa: BLE001 - as in the loop: the stream is closed whatever failed
        return end_unexpectedly(audit, error)
