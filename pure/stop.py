"""How a live run stops its child, as data: each kind's session names a ``StopPolicy`` (which signal
goes to which target for ``interrupt``, ``halt`` and metaharness's own SIGINT/SIGTERM, and how long
before the group is sent SIGKILL), and :func:`stop_for` folds each cause into the run's
``Stopping`` record (the closing reason reads ``halted`` and ``signalled``); the shell only sends
what it is given (docs/cli.md, "Wind-up and signals").
"""

from __future__ import annotations

from typing import Literal

import msgspec

from metaharness.pure.budgets import GRACE_S

StopSignal = Literal["SIGINT", "SIGTERM", "SIGKILL"]
StopTarget = Literal["child", "group"]
"""``child``: the child's own pid; ``group``: the process group it leads."""

Cause = Literal["interrupt", "halt", "signal"]


class Stop(msgspec.Struct, frozen=True):
    """Send ``signal`` to ``target`` now and, when ``grace_s`` is set, SIGKILL to the group that many
    seconds later (a SIGKILL already due sooner stays)."""

    signal: StopSignal
    target: StopTarget
    grace_s: float | None = None


TERMINATE = Stop("SIGTERM", "group", GRACE_S)
"""SIGTERM to the group, SIGKILL ``GRACE_S`` later."""

KILL = Stop("SIGKILL", "group")


class StopPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """A kind's stops: for the ``interrupt`` and ``halt`` commands, metaharness's first signal, and
    every signal after it."""

    interrupt: Stop
    halt: Stop
    signal: Stop = TERMINATE
    again: Stop = KILL


GROUP_POLICY = StopPolicy(interrupt=TERMINATE, halt=TERMINATE)
"""Every stop ends the group, SIGTERM first (the vendor CLIs: claude and codex)."""


class Stopping(msgspec.Struct, frozen=True):
    """What stopped the run so far: a ``halt`` took effect, metaharness was signalled."""

    halted: bool = False
    signalled: bool = False


def stop_for(policy: StopPolicy, stopping: Stopping, cause: Cause) -> tuple[Stopping, Stop]:
    """The stop ``cause`` calls for under ``policy`` and the record after it: a signal once signalled
    before is ``policy.again``."""
    if cause == "signal":
        stop = policy.again if stopping.signalled else policy.signal
        return msgspec.structs.replace(stopping, signalled=True), stop
    if cause == "halt":
        return msgspec.structs.replace(stopping, halted=True), policy.halt
    return stopping, policy.interrupt
