"""Hostile files and words before the spawn, through the real CLI: each ends in its named refusal (or,
for git's own files, in their absence) without blocking, without reading past a bound, and with no
scratch directory left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from closing_endpoint import CLOSING_ENDPOINT
from stand_in import records_body, stand_in

from metaharness.pure.bounds import FRAME_FILE_LIMIT
from metaharness.pure.frames import frame_document, seal_frame


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A git work tree ``ws`` tracking README.md, a stand-in loop, and an empty TMPDIR."""
    work = tmp_path / "ws"
    work.mkdir()
    (work / "README.md").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "add", "README.md"], check=True)
    (tmp_path / "tmp").mkdir()
    stand_in(tmp_path / "home", "b10x-harness", records_body([b'{"kind":"started","model":"m"}']))
    return tmp_path


def run_b10x(root: Path, *args: str | bytes) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(root / "home"), "PATH": "/usr/bin:/bin", "TMPDIR": str(root / "tmp")}
    argv = [sys.executable, "-m", "metaharness.shell", "run", "b10x", "-p", "hi", "--model-endpoint", CLOSING_ENDPOINT]
    argv += ["--decisions", "observe", "--cwd", str(root / "ws"), *args]  # type: ignore[list-item]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert not os.listdir(root / "tmp"), "a scratch directory was left behind"
    return done


@pytest.mark.parametrize("declared", ["README.md/", "README.md/."])
def test_a_context_path_naming_a_directory_is_refused(tree: Path, declared: str) -> None:
    done = run_b10x(tree, "--model", "m", "--context", declared)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"metaharness: context-not-regular: --context {declared}: the path names a directory and README.md "
        "is a regular file\n"
    )


def test_a_non_utf8_model_is_refused_by_name(tree: Path) -> None:
    done = run_b10x(tree, "--model", os.fsdecode(b"\xff"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "metaharness: argument-not-utf8: --model is not UTF-8 text, so no event could carry it\n"


def test_a_huge_context_file_is_refused_too_large_without_being_read_whole(tree: Path) -> None:
    with open(tree / "ws" / "big.md", "wb") as big:
        big.truncate(1 << 30)
    subprocess.run(["git", "-C", str(tree / "ws"), "add", "-N", "big.md"], check=True)
    done = run_b10x(tree, "--model", "m", "--context", "big.md")
    assert done.returncode == 2
    assert done.stderr.startswith("metaharness: context-too-large: the --context files add ")
    assert "big.md more than 65536 bytes" in done.stderr


@pytest.mark.parametrize("replacement", ["fifo", "dev-zero"])
def test_git_index_that_is_no_regular_file_counts_as_no_index(tree: Path, replacement: str) -> None:
    index = tree / "ws" / ".git" / "index"
    index.unlink()
    if replacement == "fifo":
        os.mkfifo(index)
    else:
        index.symlink_to("/dev/zero")
    done = run_b10x(tree, "--model", "m", "--context", "README.md")
    assert done.returncode == 2
    assert done.stderr == (
        "metaharness: context-untracked: --context README.md: git's index does not name this file in the tree\n"
    )


def test_a_commondir_fifo_is_ignored(tree: Path) -> None:
    os.mkfifo(tree / "ws" / ".git" / "commondir")
    done = run_b10x(tree, "--model", "m", "--context", "README.md")
    assert done.returncode == 3 and '"event":"stream.closed"' in done.stdout, done.stderr


def test_a_frame_past_its_bound_is_refused_unread(tree: Path) -> None:
    frame = tree / "frame.json"
    with open(frame, "wb") as handle:
        handle.truncate(FRAME_FILE_LIMIT * 75)
    done = run_b10x(tree, "--model", "m", "--decisions", "frame", "--frame", str(frame))
    assert done.returncode == 2
    assert done.stderr == (
        f"metaharness: frame-unreadable: frame {frame}: could not be read: larger than {FRAME_FILE_LIMIT} bytes\n"
    )


def test_a_frame_holding_a_key_twice_is_refused(tree: Path) -> None:
    raw = {
        "format": "metaharness.frame/1", "workflow": {"id": "w", "version": "1"}, "node": {"id": "n"},
        "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 0}, "prior": [], "obligations": [],
        "reaching": [], "next": [], "handoff": {"handoff": "none"},
        "operations": [{"op": "file.read"}, {"op": "dir.list"}, {"op": "search"}],
    }  # fmt: skip
    sealed = frame_document(seal_frame(raw).unwrap())
    frame = tree / "frame.json"
    frame.write_bytes(b'{"operations":[{"op":"file.write"}],' + sealed[1:])
    done = run_b10x(tree, "--model", "m", "--decisions", "frame", "--frame", str(frame))
    assert done.returncode == 2
    assert done.stderr == (
        f"metaharness: frame-invalid: frame {frame}: not a JSON object: the key 'operations' appears twice in one object\n"
    )


def test_a_fifo_inside_a_plugin_dir_is_refused_by_name(tmp_path: Path) -> None:
    plugin = tmp_path / "plug"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name":"p"}')
    os.mkfifo(plugin / "pipe")
    (tmp_path / "tmp").mkdir()
    stand_in(tmp_path / "home", "claude", records_body([]))
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path / "tmp")}
    argv = [sys.executable, "-m", "metaharness.shell", "run", "claude", "--credentials", "none", "-p", "hi"]
    argv += ["--model-endpoint", CLOSING_ENDPOINT, "--decisions", "observe", "--plugin-dir", str(plugin)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"metaharness: plugin-dir-unusable: --plugin-dir {plugin} holds pipe, which is not a regular file, "
        "a directory or a link\n"
    )
    assert not os.listdir(tmp_path / "tmp")
