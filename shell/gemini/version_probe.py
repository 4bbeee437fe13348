"""``gemini --version`` started beside a confined spawn (docs/adapters/gemini.md#version-probe).

The probe is a whole Node start, so a confined run does not wait for it before its child starts. It runs on the
host, where a tool cannot reach: its working directory, ``HOME``, ``GEMINI_CLI_HOME`` and ``TMPDIR`` are a fresh
``<scratch>/version-probe`` (the view covers the scratch root with an empty tmpfs), so it neither reads a ``.env``
or settings file a tool wrote nor writes ``projects.json`` into the child's home that rows H1a, H4 and H5 read.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from metaharness.pure.bounds import PROBE_BANNER_LIMIT
from metaharness.pure.budgets import SLOW_PROBE_S
from metaharness.pure.gemini.doctor import version_token
from metaharness.pure.gemini.launch import GeminiLaunch
from metaharness.shell.child_process import kill_group

PROBE_DIRECTORY = "version-probe"


class VersionProbe:
    """The running probe, its stdout read by the live loop's engine until it ends or ``due`` passes."""

    def __init__(self, child: subprocess.Popen[bytes], due: float) -> None:
        self.child = child
        self.due = due
        self.banner = bytearray()

    @classmethod
    def start(cls, launch: GeminiLaunch) -> VersionProbe | None:
        """The probe started in its own process group in a directory it creates, or ``None`` when it could not be."""
        directory = os.path.join(launch.scratch, PROBE_DIRECTORY)
        env = {**launch.environment.as_dict(), "HOME": directory, "GEMINI_CLI_HOME": directory, "TMPDIR": directory}
        try:
            os.mkdir(directory, 0o700)
            child = subprocess.Popen([launch.program, "--version"], cwd=directory, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        except OSError:
            return None
        return cls(child, time.monotonic() + SLOW_PROBE_S)

    def fileno(self) -> int:
        assert self.child.stdout is not None
        return self.child.stdout.fileno()

    def feed(self, chunk: bytes) -> None:
        self.banner.extend(chunk[: PROBE_BANNER_LIMIT - len(self.banner)])

    def answer(self, ended: bool) -> str | None:
        """The version its stdout stated (``ended``: it closed stdout), or ``None`` when it outlived ``due``; its
        group is killed and it is reaped."""
        kill_group(self.child.pid, signal.SIGKILL)
        self.child.wait()
        assert self.child.stdout is not None
        self.child.stdout.close()
        return version_token(self.banner.decode("utf-8", "replace")) if ended else None
