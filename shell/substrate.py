"""The confinement substrate's trial: ``bwrap`` found on ``SUBSTRATE_PATH``, a namespace it can build and its
version (docs/confinement.md#refusals).

A confined run starts the trial as stage 5 begins (:func:`start_trial`, from ``metaharness.shell.run``), so its two
processes run while the stage's modules load and its credential is checked; the view's stage takes the result
where it always did (:func:`substrate`), and a refusal before that ends and reaps them (:func:`end_trial`). The
module is light (no view, no route), so the trial starts before the rest of stage 5 is imported.
"""

from __future__ import annotations

import functools
import os
import subprocess

from returns.result import Failure, Result, Success

from metaharness.pure.budgets import TRIAL_S
from metaharness.pure.refusal import Refusal

SUBSTRATE_PATH = "/usr/bin:/bin"
"""Where ``bwrap`` is looked for."""
TAIL = "; install bubblewrap or pass --confine off"


class Trial:
    """The trial's two processes, both started before either is waited for: the namespace trial (its ``/bin/true``
    the namespace's pid 1: bwrap's own init there would outlive bwrap unreaped, a defunct ``bwrap`` in the caller's
    group) and ``bwrap --version``; or why they could not be started."""

    def __init__(self) -> None:
        self.found = next(
            (path for d in SUBSTRATE_PATH.split(":") if os.access(path := os.path.join(d, "bwrap"), os.X_OK)), None
        )
        self.started: list[subprocess.Popen[bytes]] = []
        self.error: OSError | None = None
        if self.found is None:
            return
        trial = [self.found, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--as-pid-1", "--", "/bin/true"]
        try:
            for argv in (trial, [self.found, "--version"]):
                self.started.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        except OSError as error:
            self.error = error
            self.end()

    def result(self) -> Result[tuple[str, str], Refusal]:
        """``bwrap``'s path and version once both processes ended within ``TRIAL_S``, or ``confine-unavailable``
        naming what failed; on any failure every one still running is killed and reaped first."""
        if self.found is None:
            return Failure(Refusal("confine-unavailable", f"bwrap not found on {SUBSTRATE_PATH}{TAIL}"))
        try:
            if self.error is not None:
                raise self.error
            (_, stderr), (stdout, _) = (process.communicate(timeout=TRIAL_S) for process in self.started)
        except (OSError, subprocess.TimeoutExpired) as error:
            return Failure(Refusal("confine-unavailable", f"the bwrap trial did not finish: {error}{TAIL}"))
        finally:
            self.end()
        if (code := self.started[0].returncode) != 0:
            first = (stderr.decode("utf-8", "replace").splitlines() or [""])[0]
            return Failure(Refusal("confine-unavailable", f"the bwrap trial exited {code}: {first}{TAIL}"))
        words = stdout.decode("utf-8", "replace").split()
        return Success((self.found, words[-1] if words else "unknown"))

    def end(self) -> None:
        """Kill and reap each of the trial's processes still running (none once :meth:`result` returned), and
        close their pipes unread: a namespace child bwrap forked before the kill may still hold them, and reading
        them to their end waited for it."""
        for process in self.started:
            if process.poll() is None:
                process.kill()
                process.wait()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()


@functools.cache
def start_trial() -> Trial:
    """The process's one trial, started on the first call."""
    return Trial()


@functools.cache
def substrate() -> Result[tuple[str, str], Refusal]:
    """``bwrap`` on ``SUBSTRATE_PATH`` and its version, once its trial ran (once per process, started here unless
    :func:`start_trial` already did), or ``confine-unavailable`` naming what failed."""
    return start_trial().result()


def end_trial() -> None:
    """A trial started and never taken (a refusal came first) is killed and reaped; else nothing."""
    if start_trial.cache_info().currsize:
        start_trial().end()
