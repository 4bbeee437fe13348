"""A run's child ends when it exits, not when its pipes close: a grandchild that keeps the child's
stdout or stderr open (in the child's process group, or one that left it with ``setsid``) must not
keep the run waiting. Once the child has exited its group is sent SIGKILL (docs/cli.md, "Wind-up and
signals"), and what is still in its pipes is read for at most ``PIPE_DRAIN_S``; a run started by the
entry point adopts its orphans and ends every one left (:func:`end_descendants`)."""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING

from metaharness.pure.events import EventValue, UnknownProcess, closing_marker
from metaharness.pure.refusal import Refusal
from metaharness.pure.run_stages import unaudited_exit
from metaharness.shell.child_process import kill_group
from metaharness.shell.run_signals import spawned_group

if TYPE_CHECKING:
    from metaharness.shell.wind_up import RunAudit


_PR_SET_CHILD_SUBREAPER = 36
_adopting = False


def adopt_orphans() -> None:
    """Make this process its descendants' subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): a grandchild
    whose parent exits, even one that called ``setsid``, becomes this process's child, so
    :func:`end_descendants` can end it. Only a process started by the entry point calls this. ``ctypes`` is loaded
    here, once the stages before the spawn passed, not with ``metaharness.shell.staging``."""
    import ctypes

    global _adopting
    libc = ctypes.CDLL(None, use_errno=True)
    _adopting = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _children() -> list[int]:
    mine = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == mine:
            found.append(int(entry))
    return found


def end_descendants(child: int | None) -> None:
    """Once the child's group is killed: SIGKILL and reap every process left whose parent is now this
    one (the adopted orphans) but ``child`` itself, which its own waiter reaps, until none is left or
    100 rounds have passed; nothing when not adopting."""
    if not _adopting:
        return
    for _ in range(100):
        children = [pid for pid in _children() if pid != child]
        if not children:
            return
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def end_unexpectedly(audit: RunAudit, error: Exception) -> int:
    """A live run met an exception nothing expected: the child's group (and every orphan) is killed,
    the stream closed ``error`` unless it already was, the ``internal-error`` line written, and the run
    exits as an unaudited run that did not complete; the caller still removes the scratch root."""
    group = spawned_group()
    if group is not None:
        kill_group(group, signal.SIGKILL)
    end_descendants(None)
    if not audit.closed:
        audit.write_event(EventValue(closing_marker(audit.writer.stream, "error", UnknownProcess())))
    sys.stderr.write(Refusal("internal-error", f"{type(error).__name__}: {error}").line() + "\n")
    sys.stderr.flush()
    return unaudited_exit("error")
