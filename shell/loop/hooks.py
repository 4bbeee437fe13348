"""Running ``--hooks`` programs (docs/loop-extensions.md): one JSON document on stdin, the loop's
environment, the workspace as cwd, its own process group, killed at the time limit or on cancel.
What an end means is :mod:`metaharness.pure.loop.hooks`' to say."""

from __future__ import annotations

import os
import signal
import subprocess

from metaharness.pure.budgets import LOOP_HOOK_TIMEOUT_S
from metaharness.pure.loop.hooks import HOOK_OUTPUT_CAP, Hook, HookExit
from metaharness.shell.loop.cancel import CancelToken, Interrupted


class HookRunner:
    """Starts one hook program at a time and reports how it ended."""

    def __init__(self, root: str, hidden_env: tuple[str, ...], cancel: CancelToken) -> None:
        self.root = root
        self.hidden_env = hidden_env
        self.cancel = cancel

    def run(self, hook: Hook, document: bytes) -> HookExit:
        """``hook.command`` fed ``document``; the time limit or a cancel kill its group."""
        environment = {k: v for k, v in os.environ.items() if k not in self.hidden_env}
        try:
            child = subprocess.Popen(
                hook.command,
                cwd=self.root,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=environment,
                start_new_session=True,
            )
        except OSError as error:
            return HookExit(None, start_error=error.strerror or str(error))
        try:
            with self.cancel.blocking(bounded_by_deadline=False):
                out, _ = child.communicate(document, timeout=LOOP_HOOK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _kill_group(child)
            child.communicate()
            return HookExit(None, timed_out=True)
        except Interrupted:
            _kill_group(child)
            child.communicate()
            return HookExit(None, start_error="the run was cancelled while it ran")
        status = child.returncode if child.returncode >= 0 else None
        return HookExit(status, stdout=out[:HOOK_OUTPUT_CAP])


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
