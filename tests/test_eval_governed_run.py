"""One governed run's bounds with real processes: a program that ignores SIGTERM past the task's
timeout is SIGKILLed after the grace (``timed-out``, exit 137), a program that cannot be started is
``failed-to-start``, and the run's directory is removed either way; the diff is binary-safe."""

from __future__ import annotations

import io
import signal
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from metaharness.pure.eval.checks import ExitCheck, FileCheck
from metaharness.shell.eval.governed_run import govern_run
from metaharness.shell.eval.packing import RunInputs
from metaharness.shell.eval.workspace import baseline_repository

STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print('{"event":"session.started"}', flush=True)
time.sleep(120)
"""
WRITER = """
import os, sys
os.chdir(sys.argv[sys.argv.index("--cwd") + 1])
open("logo.bin", "wb").write(bytes(range(255, -1, -1)))
open("new.bin", "wb").write(b"\\x00\\x01binary")
print(" ".join(sys.argv[1:]))
"""


def archive(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def inputs(timeout: float) -> RunInputs:
    tree = archive({"logo.bin": bytes(range(256)), "README.md": b"hi\n"})
    return RunInputs(
        task="t", arm="a", repeat=1, kind="b10x", options=(("model", "m"),), prompt="p", context=(), timeout=timeout,
        checks=(ExitCheck(id="exit", code=0), FileCheck(id="new", path="new.bin", exists=True, contains=None)),
        commit="0" * 40, workspace=tree, repository=baseline_repository(tree, "0" * 40), shipped=(),
    )


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where ``govern_run`` makes its run directory: this test's own folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_run_ignoring_sigterm_is_killed_after_the_grace(own_tmp: Path) -> None:
    """The program ignores SIGTERM from its exec on (the disposition is inherited), not only once its
    Python has started, which on a loaded machine can come after a 1 s timeout; 3 s leave its one line
    time to be written before the SIGKILL."""
    started = time.monotonic()
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        output = govern_run(inputs(timeout=3.0), grace=0.5, program=(sys.executable, "-c", STUBBORN))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert time.monotonic() - started < 30
    result = output.result.decode()
    assert '"state":"timed-out","exit":137' in result
    assert output.events == b'{"event":"session.started"}\n'
    assert not list(own_tmp.iterdir())


def test_a_program_that_cannot_start_is_failed_to_start(own_tmp: Path) -> None:
    output = govern_run(inputs(timeout=5.0), program=(str(own_tmp / "no-such-program"),))
    assert '"state":"failed-to-start","exit":null' in output.result.decode()
    assert output.stderr.startswith(b"metaharness-eval: failed-to-start: ")
    assert not list(own_tmp.iterdir())


def test_the_diff_against_the_ref_is_binary_safe(own_tmp: Path) -> None:
    output = govern_run(inputs(timeout=30.0), program=(sys.executable, "-c", WRITER))
    assert output.events.decode().startswith("run b10x --model m -p p --cwd ")
    assert output.events.decode().rstrip().endswith("--scratch-cwd")
    assert b"GIT binary patch" in output.diff and b"diff --git a/new.bin b/new.bin\nnew file mode 100644" in output.diff
    assert b"diff --git a/logo.bin b/logo.bin" in output.diff and b"README.md" not in output.diff
    assert '"id":"new","passed":true' in output.result.decode()
