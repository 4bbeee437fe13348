"""The confinement refusals, each named, each before any scratch file (docs/confinement.md):
``confine-unavailable`` (bwrap missing; its trial failing where the kernel will not map a user),
``confine-route-unavailable`` (codex's ChatGPT-plan login), ``confine-read-exposes``; and, once the
scratch root exists, a route proxy that cannot listen (``loopback-not-started``, the scratch removed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from stand_in import records_body, stand_in

HIDDEN = ("/usr/bin/bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--ro-bind", "/dev/null", "/usr/bin/bwrap",
          "--")  # fmt: skip
"""An outer view in which ``/usr/bin/bwrap`` is not an executable."""
CAPLESS = ("/usr/bin/bwrap", "--bind", "/", "/", "--cap-drop", "ALL", "--")
"""An outer view in which a root caller holds no capability, so a user namespace cannot map it."""
B10X = ["run", "b10x", "--decisions", "observe", "--model", "m", "--model-endpoint", "http://127.0.0.1:9/v1", "-p", "x"]


def metaharness(
    tmp_path: Path, words: list[str], outer: tuple[str, ...] = (), home: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``metaharness WORDS`` with a fresh TMPDIR (so a scratch root would show), optionally inside an
    outer bwrap ``outer`` that changes what the run finds."""
    scratch_parent = tmp_path / "tmpdir"
    scratch_parent.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(scratch_parent), **({"HOME": str(home)} if home else {})}
    argv = [*outer, sys.executable, "-m", "metaharness.shell", *words]
    return subprocess.run(argv, capture_output=True, env=env, timeout=60, stdin=subprocess.DEVNULL, check=False)


def refused(done: subprocess.CompletedProcess[bytes], code: str) -> str:
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"metaharness: {code}: "), lines
    assert done.stdout == b""
    return lines[0]


def no_scratch(tmp_path: Path) -> None:
    assert list((tmp_path / "tmpdir").iterdir()) == []


def test_bwrap_missing_is_confine_unavailable(tmp_path: Path) -> None:
    line = refused(metaharness(tmp_path, B10X, HIDDEN), "confine-unavailable")
    assert line.endswith("bwrap not found on /usr/bin:/bin; install bubblewrap or pass --confine off")
    no_scratch(tmp_path)


@pytest.mark.skipif(os.getuid() != 0, reason="a root caller without capabilities cannot map its user")
def test_a_failing_trial_is_confine_unavailable_naming_its_exit_and_first_line(tmp_path: Path) -> None:
    line = refused(metaharness(tmp_path, B10X, CAPLESS), "confine-unavailable")
    assert "the bwrap trial exited 1: bwrap: " in line and line.endswith("; install bubblewrap or pass --confine off")
    no_scratch(tmp_path)


def test_a_stage_5_refusal_beside_a_missing_bwrap_is_still_the_credential(tmp_path: Path) -> None:
    """The trial starts as stage 5 begins, but its refusal is still taken where the view's stage takes it: a
    missing credential comes before ``confine-unavailable`` (docs/hermetic.md#refusal-order)."""
    env_without_key = ["run", "claude", "-p", "x", "--credentials", "api-key", "--decisions", "observe"]
    done = metaharness(tmp_path, env_without_key, ("env", "-u", "ANTHROPIC_API_KEY", *HIDDEN))
    refused(done, "api-key-missing")


def test_a_missing_bwrap_is_refused_before_a_declared_input(tmp_path: Path) -> None:
    """Stage 6's ``frame-unreadable`` is never printed in place of stage 5's ``confine-unavailable``."""
    done = metaharness(tmp_path, ["run", "claude", "-p", "x", "--credentials", "none", "--frame", "/nonexistent"], HIDDEN)
    refused(done, "confine-unavailable")


ADOPTER = """
import ctypes, os, signal, subprocess, sys
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
done = subprocess.run(sys.argv[1:], capture_output=True, check=False)
with open(f"/proc/self/task/{os.getpid()}/children") as handle:
    adopted = [int(pid) for pid in handle.read().split()]
for pid in adopted:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print(done.returncode, done.stderr.decode().split(":")[1].strip(), len(adopted))
"""
"""Runs its argv as a subreaper and counts the processes that outlived it (adopted here, then killed and reaped)."""


def test_a_refusal_ahead_of_the_view_leaves_no_trial_process_behind(tmp_path: Path) -> None:
    """A trial started and never taken (``api-key-missing`` comes first) is killed and reaped by the run, even one
    still running (here a ``bwrap`` that never ends): nothing of it outlives metaharness."""
    hanging = tmp_path / "bwrap"
    hanging.write_text("#!/bin/sh\nexec sleep 60\n")
    hanging.chmod(0o755)
    outer = ("/usr/bin/bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--ro-bind", str(hanging),
             "/usr/bin/bwrap", "--")  # fmt: skip
    words = ["run", "claude", "-p", "x", "--credentials", "api-key", "--frame", "/nonexistent"]
    env = {key: value for key, value in os.environ.items() if key != "ANTHROPIC_API_KEY"}
    done = subprocess.run([*outer, sys.executable, "-c", ADOPTER, sys.executable, "-m", "metaharness.shell", *words],
                          capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert done.stdout.split() == ["2", "api-key-missing", "0"], done.stderr


def test_a_trial_whose_child_holds_its_pipes_is_ended_without_waiting_for_them(tmp_path: Path) -> None:
    """A trial ended before its result is reaped and its pipes closed unread: here ``bwrap`` leaves a process of its
    own holding them for two minutes (a namespace child bwrap forked before the kill), and ``api-key-missing``
    still comes at once; before, the run read the pipes to their end and waited for it."""
    holding = tmp_path / "bwrap"
    holding.write_text("#!/bin/sh\nsleep 120 &\nexec sleep 120\n")
    holding.chmod(0o755)
    outer = ("/usr/bin/bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--ro-bind", str(holding),
             "/usr/bin/bwrap", "--")  # fmt: skip
    words = ["run", "claude", "-p", "x", "--credentials", "api-key", "--frame", "/nonexistent"]
    env = {key: value for key, value in os.environ.items() if key != "ANTHROPIC_API_KEY"}
    done = subprocess.run([*outer, sys.executable, "-c", ADOPTER, sys.executable, "-m", "metaharness.shell", *words],
                          capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert done.stdout.split()[:2] == ["2", "api-key-missing"], done.stderr


def test_confine_off_needs_no_substrate(tmp_path: Path) -> None:
    done = metaharness(tmp_path, [*B10X, "--confine", "off", "--cwd", "/nonexistent"], HIDDEN)
    refused(done, "cwd-unusable")


def test_a_chatgpt_plan_login_on_codex_is_confine_route_unavailable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "auth.json").write_text(json.dumps({"tokens": {"access_token": "chatgpt-plan"}}))
    line = refused(metaharness(tmp_path, ["run", "codex", "-p", "x", "--decisions", "observe"], home=home),
                   "confine-route-unavailable")  # fmt: skip
    assert "operator-login on codex" in line and line.endswith("or pass --credentials api-key with OPENAI_API_KEY or CODEX_API_KEY set")
    assert "--credentials loopback" not in line, "loopback refuses a ChatGPT-plan login too"
    no_scratch(tmp_path)


def test_a_codex_login_that_is_a_fifo_holds_no_api_key_and_is_never_waited_on(tmp_path: Path) -> None:
    """A FIFO is no credential file: refused as missing at stage 5, never opened."""
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    os.mkfifo(home / ".codex" / "auth.json")
    line = refused(metaharness(tmp_path, ["run", "codex", "-p", "x", "--decisions", "observe"], home=home),
                   "credential-file-missing")  # fmt: skip
    assert "operator-login on codex" in line
    no_scratch(tmp_path)


@pytest.mark.parametrize("read", ["{home}", "{home}/.claude", "{home}/.codex/sub", "/"])
def test_a_read_that_exposes_a_hidden_tree_is_refused(tmp_path: Path, read: str) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text("{}")
    words = [*B10X, "--confine-read", read.format(home=home)]
    line = refused(metaharness(tmp_path, words, home=home), "confine-read-exposes")
    assert "which the view hides" in line
    no_scratch(tmp_path)


def test_doctor_says_why_confinement_is_unavailable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "b10x-harness").symlink_to(Path(sys.executable).parent / "b10x-harness")
    done = metaharness(tmp_path, ["doctor", "b10x"], HIDDEN, home=home)
    assert (
        "confinement: unavailable: bwrap not found on /usr/bin:/bin; install bubblewrap or pass --confine off"
    ) in done.stdout.decode().splitlines()


ROUTE_WILL_NOT_LISTEN = """
import errno, sys
from metaharness.shell.loopback import RouteProxy


def start(self, socket_path=None):
    raise OSError(errno.EADDRINUSE, "Address already in use")


RouteProxy.start = start
from metaharness.shell.entry import main
sys.argv = ["metaharness", *sys.argv[1:]]
main()
"""
"""metaharness with a fault injected where the route proxy listens."""


@pytest.mark.parametrize("kind", ["b10x", "claude", "codex"])
def test_a_route_proxy_that_cannot_listen_is_loopback_not_started_and_leaves_no_scratch(tmp_path: Path, kind: str) -> None:
    home = tmp_path / "home"
    stand_in(home, "b10x-harness" if kind == "b10x" else kind, records_body([]))
    scratch_parent = tmp_path / "tmpdir"
    scratch_parent.mkdir()
    words = B10X if kind == "b10x" else ["run", kind, "--decisions", "observe", "--credentials", "none",
                                         "--model-endpoint", "http://127.0.0.1:9", "-p", "x"]  # fmt: skip
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "TMPDIR": str(scratch_parent)}
    done = subprocess.run([sys.executable, "-c", ROUTE_WILL_NOT_LISTEN, *words], capture_output=True, env=env,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    assert refused(done, "loopback-not-started") == (
        "metaharness: loopback-not-started: the route proxy could not listen: Address already in use"
    )
    assert not os.listdir(scratch_parent)
