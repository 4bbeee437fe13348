"""The pinned Codex's own patch application against metaharness's reading of the same patch: on
generated patches (header padding, ``..``, an in-tree link ``src/up -> ..``, moves, paths leaving the
working directory, broken envelopes) the paths the binary touched are always among the resolved
subjects, equal to them when it applied the whole patch, and a patch metaharness cannot read is one the
binary refuses without touching anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.pipeline import is_successful
from vendor_cli import pinned_cli

from metaharness.pure.codex.patch import parse_patch
from metaharness.pure.codex.rendering import patch_resolution
from metaharness.shell.tree_links import real_subjects

CODEX = pinned_cli("codex")
pytestmark = pytest.mark.skipif(CODEX is None, reason="the pinned codex CLI is not installed")

DIRECTORIES = {
    "": "work",
    "src/": "work/src",
    "src/../": "work",
    "src/up/": "work",
    "./src//": "work/src",
    "src/up/src/": "work/src",
    "../outside/": "outside",
    "<abs>/src/": "work/src",
}
"""How a hunk's directory is spelled, and where (under the example's root) it really is."""

PADDING = ("", " ", "\t", "  ", "\u3000")


def _hunk_lines(kind: str, spelled: str, move: str | None, pad: str, tail: str) -> list[str]:
    if kind == "add":
        return [f"{pad}*** Add File: {spelled}{tail}", "+fresh"]
    if kind == "delete":
        return [f"{pad}*** Delete File: {spelled}{tail}"]
    lines = [f"{pad}*** Update File: {spelled}{tail}"]
    if move is not None:
        lines.append(f"*** Move to: {move}")
    return [*lines, "@@", "-old", "+new"]


hunk_plans = st.lists(
    st.tuples(
        st.sampled_from(("add", "delete", "update", "move")),
        st.sampled_from(sorted(DIRECTORIES)),
        st.sampled_from(sorted(DIRECTORIES)),
        st.sampled_from(PADDING),
        st.sampled_from(("", " ")),
    ),
    min_size=1,
    max_size=4,
)
envelopes = st.sampled_from(("plain", "padded", "heredoc", "no-end", "stray-marker", "blank-around"))


def _tree(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``root``: kind and content (file bytes, link target), by relative path."""
    entries: dict[str, tuple[str, str]] = {}
    for folder, directories, files in os.walk(root):
        for name in directories + files:
            path = Path(folder, name)
            relative = str(path.relative_to(root))
            if path.is_symlink():
                entries[relative] = ("link", os.readlink(path))
            elif path.is_file():
                entries[relative] = ("file", path.read_text())
    return entries


def _as_subject(relative_to_root: str, root: Path) -> str:
    work = root / "work"
    absolute = os.path.realpath(root / relative_to_root)
    inside = os.path.relpath(absolute, work)
    return f"file:{absolute}" if inside.startswith("..") else f"file:{inside}"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plans=hunk_plans, envelope=envelopes)
def test_the_binary_touches_exactly_the_resolved_subjects(plans: list[tuple[str, str, str, str, str]], envelope: str) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        (root / "work" / "src").mkdir(parents=True)
        (root / "outside").mkdir()
        (root / "work" / "src" / "up").symlink_to("..")
        work = os.path.realpath(root / "work")
        lines = []
        for number, (kind, directory, target, pad, tail) in enumerate(plans):
            spelled = directory.replace("<abs>", work) + f"h{number}.txt"
            if kind != "add":
                (root / DIRECTORIES[directory] / f"h{number}.txt").write_text("old\n")
            move = target.replace("<abs>", work) + f"m{number}.txt" if kind == "move" else None
            lines += _hunk_lines("update" if kind == "move" else kind, spelled, move, pad, tail)
        body = ["*** Begin Patch", *lines, "*** End Patch"]
        if envelope == "padded":
            body = [" *** Begin Patch ", *lines, "\t*** End Patch"]
        elif envelope == "heredoc":
            body = ["<<'EOF'", *body, "EOF"]
        elif envelope == "no-end":
            body = body[:-1]
        elif envelope == "stray-marker":
            body = [*body[:-1], "*** Frobnicate File: x.txt", body[-1]]
        elif envelope == "blank-around":
            body = ["", *body, "", ""]
        patch = "\n".join(body) + "\n"

        readable = is_successful(parse_patch(patch))
        subjects = set(real_subjects(patch_resolution(patch)[1], str(root / "work")))
        before = _tree(root)
        done = subprocess.run(
            [CODEX, "--codex-run-as-apply-patch", patch],
            cwd=root / "work",
            capture_output=True,
            timeout=60,
            check=False,
        )
        after = _tree(root)
        touched = {
            _as_subject(path, root)
            for path in set(before) | set(after)
            if before.get(path) != after.get(path)
        }
        assert touched <= subjects, (patch, touched, subjects, done.stderr)
        if not readable:
            assert done.returncode != 0 and not touched, (patch, done.stderr)
        if done.returncode == 0:
            assert touched == subjects, (patch, touched, subjects)
    finally:
        shutil.rmtree(root)
