"""One governed run on whatever machine runs it: unpack the inputs into a fresh directory, run
``metaharness run <kind> … --cwd <copy> --scratch-cwd`` with stdin closed, stop it at the task's
timeout (SIGTERM, then SIGKILL after the grace), score it, and hand back its files as bytes. The
directory is removed before returning (docs/eval.md "One run"); the copy is read only through
``shell/eval/workspace.py``."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import BinaryIO

import msgspec
from returns.result import Failure

from metaharness.pure.budgets import EVAL_STOP_GRACE_S
from metaharness.pure.eval.checks import RunFacts, file_paths
from metaharness.pure.eval.plan import EvalArm, run_words
from metaharness.pure.eval.results import decode_events, report_verdicts, result_document, run_result
from metaharness.pure.projection import project_stream
from metaharness.pure.run_page import audited_lines, run_page
from metaharness.shell.child_tree import remove_tree
from metaharness.shell.eval.packing import RunInputs
from metaharness.shell.eval.workspace import checked_files, place_baseline, unpack, workspace_diff
from metaharness.shell.facts import own_cli

_PR_SET_PDEATHSIG = 1


class RunOutput(msgspec.Struct, frozen=True):
    """The run's files for the out directory: ``result.json``, the stream, stderr, the diff and the run's
    page (``None`` when the stream does not project), all made where the run ran."""

    result: bytes
    events: bytes
    stderr: bytes
    diff: bytes
    page: bytes | None


_LIBC = ctypes.CDLL(None, use_errno=True)
"""Loaded here, in the parent: the child between fork and exec only calls into it (no dlopen there)."""


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the thread that started it dies (a worker killed
    mid-run takes its run with it rather than leaving it orphaned)."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _shipped_words(inputs: RunInputs, staging: Path) -> dict[str, tuple[str, ...]]:
    """Each shipped path written under ``staging``; the option words naming where it now is."""
    words: dict[str, tuple[str, ...]] = {}
    for number, shipped in enumerate(inputs.shipped):
        target = staging / str(number) / shipped.name
        if shipped.directory:
            unpack(shipped.data, target)
        else:
            target.parent.mkdir(parents=True)
            target.write_bytes(shipped.data)
        words[shipped.option] = (*words.get(shipped.option, ()), str(target))
    return words


def _exits_within(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether ``process`` exits within ``seconds``, woken by its pidfd the moment it does (``Popen.wait``
    with a timeout polls, up to 50 ms late); not reaped here."""
    try:
        descriptor = os.pidfd_open(process.pid)
    except OSError:
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        return bool(select.select([descriptor], [], [], seconds)[0])
    finally:
        os.close(descriptor)


def _wait(process: subprocess.Popen[bytes], timeout: float, grace: float) -> bool:
    """Wait for the run; past ``timeout`` SIGTERM it, past the grace SIGKILL. True when it timed out."""
    timed_out = not _exits_within(process, timeout)
    if timed_out:
        process.send_signal(signal.SIGTERM)
        if not _exits_within(process, grace):
            process.kill()
    process.wait()
    return timed_out


def _page(events: bytes, errors: bytes) -> bytes | None:
    """The run's page (docs/eval.md#output), or ``None`` when its stream does not project."""
    projected = project_stream("events.jsonl", events)
    if isinstance(projected, Failure):
        return None
    return run_page([projected.unwrap()], (audited_lines(errors.decode("utf-8", "replace")),)).encode("utf-8")


def _written(held: BinaryIO) -> bytes:
    """What the run wrote to a file the driver holds open, read back through its descriptor: the run's
    directory is the child's too, so a name there may be a link or a FIFO by now (docs/eval.md "One run")."""
    held.seek(0)
    return held.read()


def _exit_code(returncode: int) -> int:
    """The shell's reading of a wait status: a signal N is 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def govern_run(
    inputs: RunInputs, attempts: int = 1, grace: float = EVAL_STOP_GRACE_S, program: tuple[str, ...] = ()
) -> RunOutput:
    """Run ``inputs`` once as a governed run and return its files; ``attempts`` is recorded.
    ``program`` is the argv prefix of ``metaharness`` (this package's own CLI when empty)."""
    root = Path(tempfile.mkdtemp(prefix="metaharness-eval-"))
    try:
        copy = root / "workspace"
        unpack(inputs.workspace, copy)
        own = place_baseline(copy, inputs.repository)
        arm = EvalArm(id=inputs.arm, kind=inputs.kind, options=inputs.options)
        context = [word for path in inputs.context for word in ("--context", path)]
        argv = [
            *(program or own_cli()), "run", inputs.kind, *run_words(arm, _shipped_words(inputs, root / "inputs")),
            "-p", inputs.prompt, "--cwd", str(copy), "--scratch-cwd", *context,
        ]
        stdout_path, stderr_path = root / "events.jsonl", root / "stderr.txt"
        started = time.monotonic()
        with open(stdout_path, "xb+") as stdout, open(stderr_path, "xb+") as stderr:
            try:
                process = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, preexec_fn=_die_with_parent  # noqa: PLW1509 - prctl only
                )
            except OSError as error:
                stderr.write(f"metaharness-eval: failed-to-start: {argv[0]}: {error.strerror or error}\n".encode())
                process = None
            timed_out = process is not None and _wait(process, inputs.timeout, grace)
            duration_ms = int((time.monotonic() - started) * 1000)
            events, errors = _written(stdout), _written(stderr)
        control, audit = report_verdicts(errors)
        facts = RunFacts(
            events=decode_events(events),
            exit=_exit_code(process.returncode) if process is not None else None,
            control=control,
            audit=audit,
            files=checked_files(copy, file_paths(inputs.checks)),
        )
        result = run_result(
            (inputs.task, inputs.arm, inputs.repeat), inputs.checks, facts,
            timed_out=timed_out, duration_ms=duration_ms, attempts=attempts,
        )
        return RunOutput(
            result=result_document(result), events=events, stderr=errors, diff=workspace_diff(own, copy),
            page=_page(events, errors),
        )
    finally:
        remove_tree(str(root))

