"""A ``file:`` subject is the path the call would really touch: on generated trees (directories and
links pointing up, across, absolute and in loops) and generated spellings (``..``, ``.``, empty
segments, absolute), the resolved subject names the kernel's real path, and a subject matching
``file:src/**`` never stands for a path outside ``src``."""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.globs import glob_matches
from metaharness.pure.subjects import resolve_path
from metaharness.shell.tree_links import real_subjects

NAMES = ("src", "a", "up", "loop", "abs", "x")
TARGETS = ("..", "../..", ".", "src", "a/..", "loop", "<root>", "<root>/src", "/etc", "missing/..", "x")

trees = st.lists(
    st.tuples(st.sampled_from(("src", "src/a", "a", "", "src/up")), st.sampled_from(NAMES), st.sampled_from(TARGETS)),
    max_size=6,
)
spellings = st.lists(st.sampled_from((*NAMES, "..", ".", "", "note.md")), min_size=1, max_size=8)


def _kernel_subject(work: str, spelled: str) -> str | None:
    """The subject the kernel's resolution gives, or None when it runs into a link loop or when a ``..``
    follows a component that does not exist: the kernel's walk fails there and touches nothing, while
    ``os.path.realpath`` goes on lexically and hides a loop after it (``a/../x`` with ``x -> x``)."""
    components = spelled.split("/")
    for index, component in enumerate(components):
        if component == ".." and not os.path.exists(os.path.join(work, "/".join(components[:index]))):
            return None
    try:
        real = os.path.realpath(os.path.join(work, spelled), strict=False)
        os.path.realpath(os.path.join(work, spelled), strict=True)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError:
        return None
    inside = os.path.relpath(real, work)
    return f"file:{real}" if inside == ".." or inside.startswith("../") else f"file:{inside}"


@settings(max_examples=300, deadline=None)
@given(tree=trees, segments=spellings, absolute=st.booleans())
def test_a_resolved_subject_is_the_real_path(tree: list[tuple[str, str, str]], segments: list[str], absolute: bool) -> None:
    root = os.path.realpath(tempfile.mkdtemp())
    try:
        work = os.path.join(root, "work")
        os.makedirs(os.path.join(work, "src", "a"))
        for folder, name, target in tree:
            link = os.path.join(work, folder, name)
            try:
                parent = os.path.realpath(os.path.dirname(link), strict=True)
            except OSError:
                continue
            if os.path.isdir(parent) and (parent + "/").startswith(work + "/") and not os.path.lexists(link):
                os.symlink(target.replace("<root>", work), link)
        spelled = "/".join(segments)
        if absolute:
            spelled = f"{work}/{spelled}"
        (subject,) = real_subjects((f"file:{spelled}",), work)
        expected = _kernel_subject(work, spelled)
        if expected is not None:
            assert subject == expected
        if glob_matches("file:src/**", subject):
            real = os.path.realpath(os.path.join(work, spelled))
            assert real.startswith(os.path.join(work, "src") + "/")
    finally:
        shutil.rmtree(root)


@given(segments=spellings)
def test_without_links_resolution_is_lexical(segments: list[str]) -> None:
    spelled = "/".join(segments)
    lexical = "/" + os.path.normpath(os.path.join("/w/d", spelled)).lstrip("/")
    inside = os.path.relpath(lexical, "/w/d")
    expected = lexical if inside == ".." or inside.startswith("../") else inside
    assert resolve_path(spelled, "/w/d", {}).path == expected
