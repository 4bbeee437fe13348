"""A ``file:`` subject names the path a call would really touch (docs/decisions.md#subjects).

A spelled path is resolved as the kernel resolves it from the child's working directory: component by
component, a symbolic link is replaced by its target, ``..`` goes to the parent of what is resolved so
far, ``.`` and empty segments are dropped; a component that is no link (or does not exist) is kept as
spelled, so from the first missing component on the rest is lexical. More than ``LINK_LIMIT`` links
make the subject ``file:<unresolvable>``. A result inside the working directory is written relative to
it (``.`` for the directory itself), anything else absolute, so a tree rule never admits it.

The links are facts: a map from absolute path to link target (``None``: looked at, no link) that the
shell gathers by asking ``resolve_path`` which paths it consulted and looking each up until nothing new
is asked (the shell's tree links). A path absent from the map is taken as no link; with an
empty map the resolution is lexical.
"""

from __future__ import annotations

from collections.abc import Mapping

from msgspec import Struct

LINK_LIMIT = 40
"""Links followed in one resolution before the subject is ``file:<unresolvable>`` (Linux's own limit)."""

PATH_LIMIT = 4096
"""Characters of a spelled path looked at on disk (Linux's ``PATH_MAX``); a longer one, which the kernel
refuses to open, is resolved lexically."""

UNRESOLVABLE = "<unresolvable>"
FILE = "file:"


class TreeFacts(Struct, frozen=True):
    """The child's real working directory and the links looked at under it, newest facts last merged."""

    cwd: str
    links: dict[str, str | None]

    def merged(self, newer: TreeFacts) -> TreeFacts:
        """These facts with ``newer``'s working directory and links laid over them."""
        return TreeFacts(newer.cwd, {**self.links, **newer.links})


class PathResolution(Struct, frozen=True):
    """A spelled path resolved: the subject's path and the absolute paths whose link targets the
    resolution relied on (each absent from the links map was taken as no link)."""

    path: str
    consulted: tuple[str, ...]


def _segments(path: str) -> list[str]:
    return [segment for segment in path.split("/") if segment not in ("", ".")]


def resolve_path(spelled: str, cwd: str, links: Mapping[str, str | None]) -> PathResolution:
    """``spelled`` resolved from the absolute working directory ``cwd`` through ``links``."""
    base = _segments(cwd)
    resolved: list[str] = [] if spelled.startswith("/") else list(base)
    pending = _segments(spelled)
    pending.reverse()
    consulted: list[str] = []
    followed = 0
    probing = len(spelled) <= PATH_LIMIT
    while pending:
        segment = pending.pop()
        if segment == "..":
            if resolved:
                resolved.pop()
            continue
        candidate = "/" + "/".join((*resolved, segment))
        target = links.get(candidate) if probing else None
        if probing:
            consulted.append(candidate)
        if target is None:
            resolved.append(segment)
            continue
        followed += 1
        if followed > LINK_LIMIT:
            return PathResolution(UNRESOLVABLE, tuple(consulted))
        if target.startswith("/"):
            resolved = []
        pending.extend(reversed(_segments(target)))
    if resolved[: len(base)] == base:
        return PathResolution("/".join(resolved[len(base) :]) or ".", tuple(consulted))
    return PathResolution("/" + "/".join(resolved), tuple(consulted))


def resolve_subjects(subjects: tuple[str, ...], cwd: str, links: Mapping[str, str | None]) -> tuple[str, ...]:
    """Every ``file:`` subject resolved (``proc:`` and others kept), duplicates dropped, order kept."""
    return tuple(
        dict.fromkeys(
            FILE + resolve_path(subject[len(FILE) :], cwd, links).path if subject.startswith(FILE) else subject
            for subject in subjects
        )
    )


def consulted_paths(subjects: tuple[str, ...], cwd: str, links: Mapping[str, str | None]) -> tuple[str, ...]:
    """The absolute paths resolving ``subjects`` through ``links`` looks at, in order, once each."""
    return tuple(
        dict.fromkeys(
            path
            for subject in subjects
            if subject.startswith(FILE)
            for path in resolve_path(subject[len(FILE) :], cwd, links).consulted
        )
    )


def spelled_file_subjects(path: object, cwd: str | None) -> tuple[str, ...]:
    """A file tool's ``file:`` subject as its call spells the path: one under the working directory without the
    ``<cwd>/`` prefix, nothing else normalised (:func:`resolve_subjects` resolves it); none when it is no string."""
    if not isinstance(path, str):
        return ()
    if cwd:
        prefix = cwd.rstrip("/") + "/"
        if path.startswith(prefix) and len(path) > len(prefix):
            return (f"{FILE}{path[len(prefix) :]}",)
    return (f"{FILE}{path}",)
