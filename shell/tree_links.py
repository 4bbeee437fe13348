"""Gathering the symbolic links a call's ``file:`` subjects pass through, so the pure stage can resolve
them (``metaharness.pure.subjects``): every path the resolution consults is looked at once, until no new
path is consulted. Each is looked at through its folder's descriptor, reached from ``/`` one name at a
time without following a link (``metaharness.shell.child_tree``), then ``fstatat``/``readlinkat`` on its
last name: nothing is opened by a path the child can change, and nothing but folders is opened
(docs/adapters/common.md#child-trees).
"""

from __future__ import annotations

import posixpath

from returns.result import Success

from metaharness.pure.subjects import TreeFacts, consulted_paths, resolve_subjects
from metaharness.shell.child_tree import ChildDir, real_directory


class _Folders:
    """The folders one gathering reached, each held by its descriptor (``None``: a link or no folder on
    the way, so the paths below it are no links the resolution relies on)."""

    def __init__(self) -> None:
        self.held: dict[str, ChildDir | None] = {}

    def folder(self, path: str) -> ChildDir | None:
        """The folder at the absolute ``path``, stepped down to from the nearest one already held (a
        loop, not recursion, so no depth the child makes raises)."""
        if "/" not in self.held:
            self.held["/"] = ChildDir.open("/")
        names: list[str] = []
        above = path
        while above not in self.held:
            above, name = posixpath.split(above)
            names.append(name)
        for name in reversed(names):
            folder = self.held[above]
            reached = folder.sub(name) if folder is not None else None
            above = posixpath.join(above, name)
            self.held[above] = reached.unwrap() if isinstance(reached, Success) else None
        return self.held[path]

    def link_target(self, path: str) -> str | None:
        parent, name = posixpath.split(path)
        folder = self.folder(parent) if name else None
        return folder.link_target(name) if folder is not None else None

    def close(self) -> None:
        for folder in self.held.values():
            if folder is not None:
                folder.close()


def tree_links(subjects: tuple[str, ...], cwd: str) -> dict[str, str | None]:
    """Every path resolving ``subjects`` from ``cwd`` consults, with its link target (``None``: no link)."""
    links: dict[str, str | None] = {}
    folders = _Folders()
    try:
        while True:
            fresh = [path for path in consulted_paths(subjects, cwd, links) if path not in links]
            if not fresh:
                return links
            for path in fresh:
                links[path] = folders.link_target(path)
    finally:
        folders.close()


def tree_facts(subjects: tuple[str, ...], cwd: str) -> TreeFacts:
    """The child's real working directory and the links ``subjects`` pass through under it now."""
    real_cwd = real_directory(cwd)
    return TreeFacts(real_cwd, tree_links(subjects, real_cwd))


def real_subjects(subjects: tuple[str, ...], cwd: str) -> tuple[str, ...]:
    """``subjects`` with every ``file:`` path resolved against the tree under ``cwd`` as it is now."""
    facts = tree_facts(subjects, cwd)
    return resolve_subjects(subjects, facts.cwd, facts.links)
