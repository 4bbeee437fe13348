"""Names a child planted in ``metaharness-eval``'s out directory (docs/eval.md#the-out-directory): under
``--confine off`` a run's child is the user, so while the batch goes (or before a ``--resume``) it can put a
link, a hard link or a FIFO where the driver writes a run's files, the summary or the report. A real batch
(the project's loop against a real ``b10x-emulator``) resumed over such names replaces each, never writes
through it or waits on it, and a linked folder is refused by name with nothing written outside."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from eval_world import TASKS, emulators, make_world, run_eval, summary, write_plan

RUN = Path("runs") / "write-note" / "b10x" / "1"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The workspace, HOME and frames, and a plan of one b10x run of ``write-note``."""
    root = make_world(tmp_path_factory.mktemp("eval-out"))
    with emulators("flat-write") as urls:
        arm = {"kind": "b10x", "model": "b10x-emulated", "model-endpoint": urls["flat-write"], "frame": "write.frame.json"}
        write_plan(root, {"b10x": arm}, TASKS[:1])
        yield root


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    """A file of the user's outside the out directory, which nothing may write."""
    target = tmp_path / "host" / "precious.txt"
    target.parent.mkdir()
    target.write_text("the user's own\n")
    return target


def planted_out(root: Path, name: str) -> Path:
    """An out directory of a batch that left no result, with its run's folder made."""
    out = root / name
    (out / RUN).mkdir(parents=True)
    return out


def test_links_and_a_hard_link_planted_at_the_out_files_are_replaced_not_written_through(
    world: Path, host_file: Path
) -> None:
    out = planted_out(world, "linked")
    for name in ("result.json", "events.jsonl", ".writing.stderr.txt"):
        (out / RUN / name).symlink_to(host_file)
    os.link(host_file, out / RUN / "diff.patch")
    (out / "summary.jsonl").symlink_to(host_file)
    (out / "report.html").symlink_to(host_file)
    done = run_eval(world, "plan.yaml", "--out", "linked", "--resume")
    assert done.returncode == 0, done.stderr
    assert host_file.read_text() == "the user's own\n" and os.stat(host_file).st_nlink == 1
    for path in (RUN / "result.json", RUN / "events.jsonl", RUN / "stderr.txt", RUN / "diff.patch", Path("summary.jsonl"), Path("report.html")):
        assert stat.S_ISREG(os.lstat(out / path).st_mode), path
    assert [result["state"] for result in summary(out)] == ["finished"]
    assert json.loads((out / RUN / "result.json").read_text())["task"] == "write-note"
    assert not (out / RUN / ".writing.stderr.txt").exists()


def test_fifos_planted_at_the_out_files_are_replaced_and_the_batch_ends(world: Path) -> None:
    """Before, writing ``report.html`` opened the FIFO and waited for a reader that never came."""
    out = planted_out(world, "fifos")
    for path in (RUN / "result.json", RUN / "stderr.txt", Path("report.html"), Path("summary.jsonl")):
        os.mkfifo(out / path)
    done = run_eval(world, "plan.yaml", "--out", "fifos", "--resume", timeout=60)
    assert done.returncode == 0, done.stderr
    for path in (RUN / "result.json", RUN / "stderr.txt", Path("report.html"), Path("summary.jsonl")):
        assert stat.S_ISREG(os.lstat(out / path).st_mode), path
    assert "write-note" in (out / "report.html").read_text()


def test_a_linked_run_folder_is_refused_by_name_and_nothing_is_written_outside(world: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    out = world / "linked-folder"
    out.mkdir()
    (out / "runs").symlink_to(outside)
    done = run_eval(world, "plan.yaml", "--out", "linked-folder", "--resume")
    assert done.returncode == 2, done.stderr
    refused = [line for line in done.stderr.splitlines() if "name-refused" in line]
    assert refused == ["metaharness-eval: name-refused: linked-folder/runs is a symbolic link, which metaharness never follows"]
    assert list(outside.iterdir()) == []
    assert [result["state"] for result in summary(out)] == ["finished"]
    assert (out / "report.html").is_file()
