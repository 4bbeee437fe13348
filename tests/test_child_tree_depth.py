"""A tree the child made as deep as it likes, or full of links, is removed at the run's end and copied
by ``--retain-dir`` without following a link or raising (docs/adapters/common.md#child-trees): the
walks are stacks, not recursion (Python 3.11's ``shutil.rmtree`` raised ``RecursionError`` at ~1,000
folders, after the report, and left the scratch root behind)."""

from __future__ import annotations

import os
from pathlib import Path

from metaharness.shell.child_tree import remove_tree
from metaharness.shell.wind_up import retain_copies

DEPTH = 2100
"""Deeper than Python's recursion limit, and ``a/`` that many times is longer than ``PATH_MAX``."""


def deep_tree(top: Path, depth: int) -> None:
    """``top/a/a/…/a`` ``depth`` folders deep with a file at the bottom, made one name at a time (the path
    is longer than ``PATH_MAX``)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("a", dir_fd=fd)
        inner = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    os.close(fd)


def host_folder(tmp_path: Path) -> Path:
    host = tmp_path / "host"
    (host / "inner").mkdir(parents=True)
    (host / "precious").write_text("the caller's file\n")
    (host / "inner" / "kept").write_text("kept\n")
    return host


def test_a_deep_tree_with_planted_links_is_removed_and_nothing_outside_it(tmp_path: Path) -> None:
    host = host_folder(tmp_path)
    scratch = tmp_path / "scratch"
    (scratch / "hook-channel" / "requests").mkdir(parents=True)
    deep_tree(scratch / "hook-channel" / "requests", DEPTH)
    (scratch / "to-host").symlink_to(host)
    (scratch / "to-precious").symlink_to(host / "precious")
    (scratch / "hook-channel" / "requests" / "a" / "to-inner").symlink_to(host / "inner")
    os.mkfifo(scratch / "fifo")
    (scratch / ".removing-1").mkdir()
    remove_tree(str(scratch))
    assert not scratch.exists()
    assert sorted(str(p.relative_to(host)) for p in host.rglob("*")) == ["inner", "inner/kept", "precious"]
    assert (host / "precious").read_text() == "the caller's file\n"


def test_a_missing_or_linked_root_is_left_alone(tmp_path: Path) -> None:
    host = host_folder(tmp_path)
    remove_tree(str(tmp_path / "absent"))
    (tmp_path / "linked").symlink_to(host)
    remove_tree(str(tmp_path / "linked"))
    assert (tmp_path / "linked").is_symlink() and (host / "precious").exists() and (host / "inner" / "kept").exists()


def test_retain_copies_a_deep_tree_without_raising(tmp_path: Path) -> None:
    """What lies deeper than a path the operator's side can name is one ``RETAIN_FAILED``; the files
    the walk reached before it are kept."""
    scratch = tmp_path / "scratch"
    requests = scratch / "hook-channel" / "requests"
    requests.mkdir(parents=True)
    (requests / "0.json").write_text("{}")
    deep_tree(requests, DEPTH)
    kept = tmp_path / "kept"
    kept.mkdir()
    (warning,) = retain_copies(str(kept), "run-1", str(scratch), [(str(requests), "hook-requests")])
    assert warning.code == "RETAIN_FAILED" and "File name too long" in warning.message
    assert (kept / "run-1" / "hook-requests" / "0.json").read_text() == "{}"
    remove_tree(str(scratch))
    remove_tree(str(kept))
    assert not scratch.exists() and not kept.exists()


def test_a_file_the_child_made_a_terabyte_by_truncate_is_kept_sparse_and_whole(tmp_path: Path) -> None:
    """A hook request extended with ``truncate -s 1T`` (no disk used) was copied as a terabyte of zeros
    into the operator's ``--retain-dir``; the copy keeps its holes, so it costs neither disk nor time,
    and holds the same bytes."""
    scratch = tmp_path / "scratch"
    requests = scratch / "hook-channel" / "requests"
    requests.mkdir(parents=True)
    with open(requests / "1.json", "wb") as planted:
        planted.write(b'{"head":1}')
        planted.seek(512 * 1024 * 1024)
        planted.write(b"middle")
        planted.truncate(1024**4)
    kept = tmp_path / "kept"
    kept.mkdir()
    assert retain_copies(str(kept), "run-1", str(scratch), [(str(requests), "hook-requests")]) == ()
    copy = kept / "run-1" / "hook-requests" / "1.json"
    assert copy.stat().st_size == 1024**4 and copy.stat().st_blocks * 512 < 64 * 1024 * 1024
    with open(copy, "rb") as handle:
        assert handle.read(10) == b'{"head":1}'
        handle.seek(512 * 1024 * 1024 - 4)
        assert handle.read(14) == b"\0\0\0\0middle\0\0\0\0"
