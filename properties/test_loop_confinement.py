"""Path confinement never lets a generated path escape the workspace (docs/loop.md#confinement)."""

from __future__ import annotations

import atexit
import json
import os
import posixpath
import shutil
import tempfile
import time
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from returns.result import Success

from metaharness.pure.loop.catalogue import publish
from metaharness.pure.loop.gates import Admitted, admit_call
from metaharness.pure.loop.paths import confine
from metaharness.shell.loop.cancel import CancelToken
from metaharness.shell.loop.tools import ToolFailure, Workspace

ROOT = "/work/space"
SEGMENT = st.one_of(
    st.sampled_from(["..", ".", "", "a", "b", "work", "space", "link", "out", "é", "ü/..", "\u202e", "..."]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=4),
)
PATHS = st.builds(
    lambda absolute, parts: ("/" if absolute else "") + "/".join(parts),
    st.booleans(),
    st.lists(SEGMENT, max_size=6),
)


@settings(max_examples=500, deadline=None)
@given(PATHS)
def test_a_confined_path_is_relative_and_lexically_inside(path: str) -> None:
    result = confine(path, ROOT)
    assume(isinstance(result, Success))
    relative = result.unwrap()
    assert not relative.startswith("/") and "\0" not in relative
    assert ".." not in relative.split("/")
    joined = posixpath.normpath(posixpath.join(ROOT, relative))
    assert joined == ROOT or joined.startswith(ROOT + "/")


def _tree() -> tuple[str, str]:
    base = tempfile.mkdtemp(prefix="b10x-confine-")
    atexit.register(shutil.rmtree, base, True)
    outside = os.path.join(base, "outside")
    root = os.path.join(base, "root")
    os.makedirs(os.path.join(root, "a"))
    os.makedirs(outside)
    Path(outside, "secret").write_text("OUTSIDE-MARKER\n")
    Path(root, "a", "inside").write_text("inside\n")
    os.symlink(outside, os.path.join(root, "out"))
    os.symlink(os.path.join(outside, "secret"), os.path.join(root, "a", "link"))
    os.symlink("../..", os.path.join(root, "a", "up"))
    os.symlink("../a", os.path.join(root, "a", "back"))
    os.symlink(os.path.join(os.path.realpath(root), "a"), os.path.join(root, "abs"))
    return os.path.realpath(root), os.path.realpath(outside)


TREE_ROOT, TREE_OUTSIDE = _tree()
WORKSPACE = Workspace(TREE_ROOT, (), CancelToken(None, time.monotonic()))
PUBLICATION = publish(True, ())
TREE_SEGMENT = st.sampled_from(
    ["a", "out", "link", "up", "back", "abs", "inside", "secret", "..", ".", "", "root", "outside"]
)
TREE_PATHS = st.builds(
    lambda absolute, parts: (TREE_ROOT + "/" if absolute else "") + "/".join(parts),
    st.booleans(),
    st.lists(TREE_SEGMENT, min_size=1, max_size=5),
)


@settings(max_examples=300, deadline=None)
@given(TREE_PATHS, st.sampled_from(["file_read", "dir_list", "find", "search", "file_write"]))
def test_symlinks_never_lead_a_tool_outside(path: str, tool: str) -> None:
    before = sorted(os.listdir(TREE_OUTSIDE))
    extra = {"file_write": {"text": "x"}, "find": {"glob": "*"}, "search": {"pattern": "MARKER"}}.get(tool, {})
    arguments = {"path": path, **extra}
    admitted = admit_call(tool, arguments, PUBLICATION, (), TREE_ROOT)
    assume(isinstance(admitted, Admitted) and admitted.relative is not None)
    try:
        if tool == "file_write":
            WORKSPACE.check_write_target(path, admitted.relative, must_exist=False)
            WORKSPACE.file_write(path, admitted.relative, arguments)
            written = os.path.realpath(os.path.join(TREE_ROOT, admitted.relative))
            assert written.startswith(TREE_ROOT + "/")
        else:
            reply = getattr(WORKSPACE, tool)(path, admitted.relative, arguments)
            assert b"OUTSIDE-MARKER" not in reply
            served = os.path.realpath(os.path.join(TREE_ROOT, admitted.relative))
            assert served == TREE_ROOT or served.startswith(TREE_ROOT + "/")
    except (ToolFailure, OSError):
        pass
    assert sorted(os.listdir(TREE_OUTSIDE)) == before
    assert Path(TREE_OUTSIDE, "secret").read_text() == "OUTSIDE-MARKER\n"


@settings(max_examples=300, deadline=None)
@given(TREE_PATHS)
def test_what_dir_list_reaches_by_descriptor_is_what_realpath_finds_inside(path: str) -> None:
    """Links resolved from their text folder by folder list only a directory whose real path is inside the root,
    and list exactly its entries."""
    admitted = admit_call("dir_list", {"path": path}, PUBLICATION, (), TREE_ROOT)
    assume(isinstance(admitted, Admitted) and admitted.relative is not None)
    try:
        reply = json.loads(WORKSPACE.dir_list(path, admitted.relative, {}))
    except ToolFailure:
        return
    real = os.path.realpath(os.path.join(TREE_ROOT, admitted.relative))
    assert real == TREE_ROOT or real.startswith(TREE_ROOT + "/")
    assert [entry["name"] for entry in reply["entries"]] == sorted(os.listdir(real))
