"""The driver packs a task's workspace archive once for the runs of that task (docs/eval.md "One run"):
``git archive`` runs once per task in a row, every run of it gets the same bytes, and the next task's
commit gets its own archive."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from metaharness.pure.eval.plan import Task
from metaharness.shell.eval.packing import LastArchive, resolve_workspace


def commit(repository: Path, text: str) -> None:
    (repository / "README.md").write_text(text)
    for words in (["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@localhost", "commit", "-qm", text]):
        subprocess.run(["git", "-C", str(repository), *words], check=True, capture_output=True)


def readme(archive: bytes) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(archive)) as opened:
        member = opened.extractfile("README.md")
        assert member is not None
        return member.read()


def test_a_tasks_runs_share_one_archive_and_the_next_commit_gets_its_own(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    commit(repository, "first\n")
    commit(repository, "second\n")
    first = Task(id="a", prompt="p", repository="repo", ref="HEAD~1", context=(), timeout=60, checks=())
    second = Task(id="b", prompt="p", repository="repo", ref="HEAD", context=(), timeout=60, checks=())
    commits = [resolve_workspace(tmp_path, task) for task in (first, second)]
    assert all(isinstance(found, str) for found in commits)
    archive = LastArchive()
    runs = [archive(tmp_path, first, str(commits[0])) for _ in range(3)]
    assert runs[0] is runs[1] is runs[2] and readme(runs[0].tree) == b"first\n"
    assert readme(archive(tmp_path, second, str(commits[1])).tree) == b"second\n"
