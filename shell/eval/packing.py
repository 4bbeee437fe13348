"""What one run needs, packed as bytes on the driver so a worker needs no shared filesystem:
the workspace as a tar archive of its commit, and the files and directories the arm's options name.
Also the git facts the plan is checked against before any run starts."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import msgspec

from metaharness.pure.eval.checks import Check
from metaharness.pure.eval.plan import SHIPPED_DIRECTORY_OPTIONS, SHIPPED_FILE_OPTIONS, EvalArm, OptionValue, Task
from metaharness.pure.refusal import Refusal
from metaharness.shell.eval.workspace import baseline_repository, directory_archive


class ShippedPath(msgspec.Struct, frozen=True):
    """One path an arm option names: its option, base name, and bytes (a tar archive for a directory)."""

    option: str
    name: str
    data: bytes
    directory: bool


class RunInputs(msgspec.Struct, frozen=True):
    """Everything one governed run needs, by value."""

    task: str
    arm: str
    repeat: int
    kind: str
    options: tuple[tuple[str, OptionValue], ...]
    prompt: str
    context: tuple[str, ...]
    timeout: float
    checks: tuple[Check, ...]
    commit: str
    workspace: bytes
    repository: bytes
    shipped: tuple[ShippedPath, ...]


def _git(repository: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["git", "-C", str(repository), *args], stdin=subprocess.DEVNULL, capture_output=True, check=False
    )


def resolve_workspace(plan_dir: Path, task: Task) -> str | Refusal:
    """The commit the task's ref names, after checking the workspace is a git repository holding
    the task's context files at that commit."""
    repository = plan_dir / task.repository
    where = f"tasks.{task.id}.workspace"
    if not repository.is_dir() or _git(repository, "rev-parse", "--git-dir").returncode != 0:
        return Refusal("plan-workspace-not-git", f"{where}: {repository} is not a git repository")
    resolved = _git(repository, "rev-parse", "--verify", "--quiet", f"{task.ref}^{{commit}}")
    if resolved.returncode != 0:
        return Refusal("plan-ref-unresolved", f"{where}: {task.ref} names no commit in {repository}")
    commit = resolved.stdout.decode().strip()
    for path in task.context:
        if _git(repository, "cat-file", "-e", f"{commit}:{path}").returncode != 0:
            return Refusal("plan-context-missing", f"tasks.{task.id}.context: {path} is not in {task.ref}")
    return commit


def _shipped_paths(arm: EvalArm) -> list[tuple[str, str]]:
    named = []
    for option in (*SHIPPED_FILE_OPTIONS, *SHIPPED_DIRECTORY_OPTIONS):
        value = arm.option(option)
        if isinstance(value, str):
            named.append((option, value))
        elif isinstance(value, tuple):
            named += [(option, path) for path in value]
    return named


def ship_arm(plan_dir: Path, arm: EvalArm) -> tuple[ShippedPath, ...] | Refusal:
    """The bytes of every file (and directory) the arm's options name, relative to the plan."""
    shipped = []
    for option, path in _shipped_paths(arm):
        target = plan_dir / path
        try:
            if option in SHIPPED_DIRECTORY_OPTIONS:
                if not target.is_dir():
                    raise NotADirectoryError(0, "not a directory")
                data, directory = directory_archive(target), True
            else:
                data, directory = target.read_bytes(), False
        except OSError as error:
            return Refusal("plan-file-unreadable", f"arms.{arm.id}.{option}: {target}: {error.strerror or error}")
        shipped.append(ShippedPath(option=option, name=os.path.basename(path.rstrip("/")) or option, data=data, directory=directory))
    return tuple(shipped)


def workspace_archive(plan_dir: Path, task: Task, commit: str) -> bytes:
    """The task's workspace at ``commit`` as a tar archive."""
    done = _git(plan_dir / task.repository, "archive", "--format=tar", commit)
    if done.returncode != 0:
        raise OSError(f"git archive of {task.repository} at {commit} failed: {done.stderr.decode().strip()}")
    return done.stdout


class Workspace(msgspec.Struct, frozen=True):
    """A task's workspace at its commit: the tree as a tar archive and its baseline repository (the
    copy's ``.git`` with the tree committed once) as another."""

    tree: bytes
    repository: bytes


class LastArchive:
    """:func:`workspace_archive` and its :func:`baseline_repository`, made once for the runs of one task in
    a row (plan order packs a task's runs together) and shared by them: the driver holds the archives of
    the task being packed, not one per run, and runs git once per task rather than once per run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[Path, str] | None = None
        self._workspace = Workspace(tree=b"", repository=b"")

    def __call__(self, plan_dir: Path, task: Task, commit: str) -> Workspace:
        key = (plan_dir / task.repository, commit)
        with self._lock:
            if self._key != key:
                tree = workspace_archive(plan_dir, task, commit)
                self._workspace = Workspace(tree=tree, repository=baseline_repository(tree, commit))
                self._key = key
            return self._workspace
