"""Gathering the symbolic links a call's ``file:`` subjects pass through, so the pure stage can resolve
them (``metaharness.pure.subjects``): every path the resolution consults is looked at once with
``lstat`` (never opened, so a FIFO or device costs nothing), until no new path is consulted.
"""

from __future__ import annotations

import os
import stat

from metaharness.pure.subjects import TreeFacts, consulted_paths, resolve_subjects


def _link_target(path: str) -> str | None:
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return os.readlink(path)
    except (OSError, ValueError):
        return None
    return None


def tree_links(subjects: tuple[str, ...], cwd: str) -> dict[str, str | None]:
    """Every path resolving ``subjects`` from ``cwd`` consults, with its link target (``None``: no link)."""
    links: dict[str, str | None] = {}
    while True:
        fresh = [path for path in consulted_paths(subjects, cwd, links) if path not in links]
        if not fresh:
            return links
        for path in fresh:
            links[path] = _link_target(path)


def tree_facts(subjects: tuple[str, ...], cwd: str) -> TreeFacts:
    """The child's real working directory and the links ``subjects`` pass through under it now."""
    real_cwd = os.path.realpath(cwd)
    return TreeFacts(real_cwd, tree_links(subjects, real_cwd))


def real_subjects(subjects: tuple[str, ...], cwd: str) -> tuple[str, ...]:
    """``subjects`` with every ``file:`` path resolved against the tree under ``cwd`` as it is now."""
    facts = tree_facts(subjects, cwd)
    return resolve_subjects(subjects, facts.cwd, facts.links)
