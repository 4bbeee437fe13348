"""Lines to Claude Code's stdin never hold the run (docs/adapters/claude.md#in-band-decisions): a CLI that reads
none of them — stopped by a hostile tool, say — costs at most ``SEND_WAIT_S``, then its stdin is closed and the
calls still owed an answer are refused at the CLI's own timeout."""

from __future__ import annotations

import os
import time

import pytest

from metaharness.pure.claude.replay import replay_facts
from metaharness.pure.claude.session import open_session
from metaharness.pure.stop import GROUP_POLICY
from metaharness.shell.child_process import ChildStop
from metaharness.shell.claude import live


def test_a_stdin_nobody_reads_is_closed_after_the_wait_instead_of_blocking(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "SEND_WAIT_S", 0.2)
    facts = replay_facts(decisions="observe", hermetic="off", transcript_path="t", harness_version=None, model=None)
    session, _ = open_session(facts, "r", "observe", None)
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    loop = live._Loop(session, write_end, lambda line: None, ChildStop(os.getpid(), GROUP_POLICY), "/")
    started = time.monotonic()
    loop.send(b"x" * (1 << 20))
    assert loop.to_child is None and time.monotonic() - started < 5
    assert len(os.read(read_end, 1 << 20)) > 0
    os.close(read_end)
