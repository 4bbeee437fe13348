"""``doctor`` for a Node-launched vendor CLI (docs/adapters/common.md#doctor): the program resolved on the child's
PATH floor as the spawn resolves it, then ``--version`` and ``--help`` probed in a constructed environment (the
floor's PATH, the caller's locale and identity, a scratch config home and ``TMPDIR``), so the probe reads and
writes nothing of the caller's."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from returns.result import Failure

from metaharness.pure.environment import path_floor, resolve_program
from metaharness.pure.refusal import Refusal
from metaharness.shell.facts import caller_environment, gather_program_candidates, run_probe

CALLER_VARIABLES = ("HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TZ")
"""What the probe's environment keeps of the caller's."""


class Probed(NamedTuple):
    """A resolved vendor CLI: its path, the version its banner names, its ``--help`` text, and the environment
    and scratch home further probes run in (while the ``probed_vendor`` block runs)."""

    resolved: str
    version: str
    help_text: str
    env: dict[str, str]
    home: str


@contextmanager
def probed_vendor(
    program: str, home_variable: str, probe_s: float, version_token: Callable[[str], str | None]
) -> Iterator[Probed | Refusal]:
    """``program`` resolved and probed, its config home (``home_variable``) a scratch directory; or
    ``program-not-found``, or ``version-unreadable`` when ``--version`` names no version (``version_token``)."""
    caller_env = caller_environment()
    path = path_floor(caller_env)
    found = resolve_program(program, path, gather_program_candidates(program, path))
    if isinstance(found, Failure):
        yield found.failure()
        return
    resolved = found.unwrap()
    with tempfile.TemporaryDirectory(prefix="metaharness-doctor-") as home:
        env = {"PATH": path, home_variable: home, "TMPDIR": home}
        env.update((key, caller_env[key]) for key in CALLER_VARIABLES if key in caller_env)
        banner = run_probe((resolved, "--version"), env, timeout_s=probe_s, cwd=home)
        version = version_token(banner.stdout.decode("utf-8", "replace")) if banner is not None else None
        if version is None:
            yield Refusal("version-unreadable", f"{resolved} --version gave no version")
            return
        shown = run_probe((resolved, "--help"), env, timeout_s=probe_s, cwd=home)
        yield Probed(resolved, version, shown.stdout.decode("utf-8", "replace") if shown else "", env, home)
