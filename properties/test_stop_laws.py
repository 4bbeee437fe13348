"""Laws of the stop policies, whatever the causes arrive: a halt or a signal is never forgotten, the
child is never left without a SIGKILL on its way once signalled, and only an interrupt may spare the
group."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from metaharness.pure.b10x.seam import STOP_POLICY as B10X
from metaharness.pure.claude.session import STOP_POLICY as CLAUDE
from metaharness.pure.codex.session import STOP_POLICY as CODEX
from metaharness.pure.stop import Stopping, stop_for

CAUSES = st.lists(st.sampled_from(["interrupt", "halt", "signal"]), max_size=12)


@given(st.sampled_from([B10X, CLAUDE, CODEX]), CAUSES)
def test_the_record_only_grows_and_every_stop_but_an_interrupt_reaches_the_group(policy, causes) -> None:
    stopping = Stopping()
    for cause in causes:
        before = stopping
        stopping, stop = stop_for(policy, stopping, cause)
        assert stopping.halted >= before.halted and stopping.signalled >= before.signalled
        assert stop.target == "group" or cause == "interrupt"
        assert stop.signal == "SIGKILL" or stop.grace_s is not None or cause == "interrupt"
        if cause == "signal" and before.signalled:
            assert stop.signal == "SIGKILL"
    assert stopping.halted == ("halt" in causes) and stopping.signalled == ("signal" in causes)
