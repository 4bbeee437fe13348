"""A real pseudo-terminal for tests: one tmux server on a private socket with one pane, whose screen a
test reads (``tmux capture-pane``) and into which it types (``tmux send-keys``)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

TMUX = shutil.which("tmux")
WAIT = 60.0


class Pane:
    """One tmux server on a private socket with one pane running ``command`` under bash."""

    def __init__(self, socket: Path, command: str, env: dict[str, str]) -> None:
        self.socket = socket
        wrapped = "env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " bash -c " + shlex.quote(command)
        self.tmux("new-session", "-d", "-x", "200", "-y", "70", wrapped, ";", "set-option", "remain-on-exit", "on")

    def tmux(self, *args: str) -> str:
        done = subprocess.run([str(TMUX), "-S", str(self.socket), *args], capture_output=True, check=True, timeout=30)
        return done.stdout.decode("utf-8", errors="replace")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-")

    def wait_for(self, test: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            shown = self.screen()
            if test(shown):
                return shown
            time.sleep(0.2)
        raise AssertionError(f"the pane never showed {what}:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run([str(TMUX), "-S", str(self.socket), "kill-server"], capture_output=True, check=False, timeout=30)
