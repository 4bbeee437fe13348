"""The link facts of a call's ``file:`` subjects, gathered through folder descriptors
(docs/adapters/common.md#child-trees): the resolution agrees with the kernel's, a FIFO at a subject's name
is never opened, a link on the way is never followed by a lookup, and a tree deeper than Python's
recursion limit raises nothing. ``tests/test_child_tree_rule.py`` holds the module to no by-name call."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from metaharness.shell.child_tree import remove_tree
from metaharness.shell.tree_links import real_subjects, tree_links


def planted(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (work / "src" / "up").symlink_to("..")
    (work / "away").symlink_to(tmp_path / "outside")
    (work / "chain").symlink_to("away")
    (work / "dangling").symlink_to(tmp_path / "nowhere" / "x")
    os.mkfifo(work / "fifo")
    return work


def test_the_facts_resolve_as_the_kernel_resolves(tmp_path: Path) -> None:
    work = planted(tmp_path)
    spelled = ("src/up/note.md", "chain/secret", "dangling", "fifo", "src/../src/a.py", "away/../x")
    resolved = real_subjects(tuple(f"file:{path}" for path in spelled), str(work))
    kernel = [os.path.relpath(os.path.realpath(work / path), os.path.realpath(work)) for path in spelled]
    expected = tuple(f"file:{path}" if not path.startswith("..") else f"file:{os.path.realpath(work / s)}"
                     for path, s in zip(kernel, spelled, strict=True))  # fmt: skip
    assert resolved == expected


def test_a_fifo_at_the_subjects_name_is_looked_at_never_opened(tmp_path: Path) -> None:
    work = planted(tmp_path)
    done = threading.Event()
    found: dict[str, str | None] = {}

    def gather() -> None:
        found.update(tree_links(("file:fifo", "file:fifo/below"), os.path.realpath(work)))
        done.set()

    threading.Thread(target=gather, daemon=True).start()
    assert done.wait(10), "looking up a FIFO's name blocked: it was opened"
    assert found[f"{os.path.realpath(work)}/fifo"] is None


def test_a_lookup_below_a_link_never_follows_it(tmp_path: Path) -> None:
    """``away`` is a link: what lies below it is read only where the resolution lands, the link's target."""
    work = os.path.realpath(planted(tmp_path))
    (Path(tmp_path) / "outside" / "inner").symlink_to("/etc")
    links = tree_links(("file:away/inner/passwd",), work)
    assert links[f"{work}/away"] == str(tmp_path / "outside")
    assert links[f"{os.path.realpath(tmp_path)}/outside/inner"] == "/etc"
    assert links.get(f"{work}/away/inner") is None, "no lookup went through the link"


def test_a_tree_past_the_recursion_limit_raises_nothing(tmp_path: Path) -> None:
    """1,500 folders, a path longer than ``PATH_MAX`` from ``/`` (which a lookup by name could not even
    name), with a link to ``..`` at the bottom: resolved by stepping down through descriptors."""
    work = tmp_path / "work"
    work.mkdir()
    held = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1500):
        os.mkdir("a", dir_fd=held)
        inner = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=held)
        os.close(held)
        held = inner
    os.symlink("..", "up", dir_fd=held)
    os.close(held)
    spelled = "/".join(["a"] * 1500) + "/up/note.md"
    try:
        (resolved,) = real_subjects((f"file:{spelled}",), str(work))
    finally:
        remove_tree(str(work))
    assert resolved == "file:" + "/".join(["a"] * 1499) + "/note.md"
