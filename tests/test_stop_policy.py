"""Each kind's stop policy as data: which signal goes where for ``interrupt``, ``halt`` and
metaharness's own signals, and what the closing reason reads back."""

from __future__ import annotations

from metaharness.pure.b10x.seam import STOP_POLICY as B10X
from metaharness.pure.budgets import GRACE_S
from metaharness.pure.claude.session import STOP_POLICY as CLAUDE
from metaharness.pure.codex.session import STOP_POLICY as CODEX
from metaharness.pure.stop import KILL, TERMINATE, Stop, Stopping, stop_for


def test_b10x_interrupts_the_loop_alone_and_halts_by_killing_its_group() -> None:
    assert stop_for(B10X, Stopping(), "interrupt") == (Stopping(), Stop("SIGINT", "child"))
    assert stop_for(B10X, Stopping(), "halt") == (Stopping(halted=True), KILL)


def test_the_vendor_cli_kinds_end_their_group_with_sigterm_then_sigkill_after_the_grace() -> None:
    for policy in (CLAUDE, CODEX):
        for cause in ("interrupt", "halt"):
            stopping, stop = stop_for(policy, Stopping(), cause)  # type: ignore[arg-type]
            assert stop == Stop("SIGTERM", "group", GRACE_S) and stopping.halted == (cause == "halt")


def test_a_first_signal_terminates_and_every_later_one_kills_at_once() -> None:
    for policy in (B10X, CLAUDE, CODEX):
        stopping, first = stop_for(policy, Stopping(), "signal")
        assert first == TERMINATE and stopping == Stopping(signalled=True)
        again, second = stop_for(policy, stopping, "signal")
        assert second == KILL and again == stopping


def test_a_signal_after_a_halt_keeps_the_halt() -> None:
    stopping, _ = stop_for(CLAUDE, Stopping(), "halt")
    assert stop_for(CLAUDE, stopping, "signal")[0] == Stopping(halted=True, signalled=True)
