"""Generated trees give the first applicable context refusal of docs/hermetic.md#context-refusals; the smallest-N rule
never yields a closing line a file contains (docs/hermetic.md#context-rendering)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metaharness.pure.context import (
    ContextFileRead,
    render_context_block,
    smallest_free_n,
)
from metaharness.shell.context_files import load_context_files

PER_FILE_CODE = {
    "symlink": "context-symlink",
    "dotdot": "context-path-unsafe",
    "absolute": "context-path-unsafe",
    "empty": "context-path-unsafe",
    "directory": "context-not-regular",
    "fifo": "context-not-regular",
    "missing": "context-not-regular",
    "not-utf8": "context-not-utf8",
    "untracked": "context-untracked",
}
FAILING = tuple(PER_FILE_CODE)


@st.composite
def specs_strategy(draw: st.DrawFn) -> list[tuple[str, int]]:
    """Mostly sound lists (so 17 files and oversize are reached) with up to two failing entries."""
    depths = st.integers(min_value=0, max_value=3)
    size = draw(st.one_of(st.integers(min_value=1, max_value=6), st.integers(min_value=15, max_value=18)))
    entries = st.tuples(st.sampled_from(["ok", "ok", "big"]), depths)
    specs = draw(st.lists(entries, min_size=size, max_size=size))
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        position = draw(st.integers(min_value=0, max_value=len(specs) - 1))
        specs[position] = (draw(st.sampled_from(FAILING)), draw(depths))
    return specs


SPECS = specs_strategy()


def build(root: Path, specs: list[tuple[str, int]]) -> tuple[list[str], dict[str, int]]:
    """Write the tree and track what should be tracked; return the declared paths and the content
    size of each readable file."""
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    paths: list[str] = []
    sizes: dict[str, int] = {}
    tracked: list[str] = []
    for index, (kind, depth) in enumerate(specs):
        folder = "/".join(f"d{index}_{level}" for level in range(depth))
        path = f"{folder}/f{index}.md" if folder else f"f{index}.md"
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind in ("ok", "untracked", "big", "not-utf8"):
            data = {"ok": b"text\n", "untracked": b"u\n", "big": b"b" * 20_000, "not-utf8": b"x\xc3("}[kind]
            target.write_bytes(data)
            sizes[path] = len(data)
            if kind != "untracked":
                tracked.append(path)
        elif kind == "symlink":
            real = root / f"real{index}"
            real.mkdir()
            (real / "f.md").write_text("outside\n")
            if depth == 0:
                os.symlink(real / "f.md", target)
            else:
                top = root / f"d{index}_0"
                (root / f"d{index}_0").rename(root / f"moved{index}")
                os.symlink(root / f"moved{index}", top)
        elif kind == "directory":
            target.mkdir()
        elif kind == "fifo":
            os.mkfifo(target)
        elif kind == "dotdot":
            path = f"{folder}/../f{index}.md" if folder else f"../f{index}.md"
        elif kind == "absolute":
            path = str(target)
        elif kind == "empty":
            path = ""
        paths.append(path)
    if tracked:
        subprocess.run(["git", "add", "--", *tracked], cwd=root, check=True)
    return paths, sizes


def expected_code(specs: list[tuple[str, int]], paths: list[str], sizes: dict[str, int]) -> str | None:
    """The oracle: the first per-file problem in declaration order, then the count, then the size."""
    for kind, _ in specs:
        if kind in PER_FILE_CODE:
            return PER_FILE_CODE[kind]
    if len(specs) > 16:
        return "context-too-many"
    if sum(sizes[path] + len(path.encode()) for path in paths) > 65_536:
        return "context-too-large"
    return None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=SPECS)
def test_the_refusal_is_the_first_applicable_one(specs: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "tree"
        root.mkdir()
        paths, sizes = build(root, specs)
        result = load_context_files(str(root), paths)
        expected = expected_code(specs, paths, sizes)
        if expected is None:
            files = result.unwrap()
            assert [file.path for file in files] == paths
            assert all(file.size == sizes[file.path] for file in files)
        else:
            assert result.failure().code == expected


CLOSINGS = st.sampled_from(["</context-file-{}>", "</context-files-{}>"])
FRAGMENTS = st.one_of(
    st.builds(lambda closing, n: closing.format(n), CLOSINGS, st.integers(min_value=1, max_value=6)),
    st.text(alphabet="<>/-contexfils123\n", max_size=12),
)
TEXTS = st.lists(st.lists(FRAGMENTS, max_size=8).map("".join), min_size=1, max_size=5)


@settings(max_examples=300)
@given(texts=TEXTS)
def test_smallest_n_yields_closing_lines_no_file_contains(texts: list[str]) -> None:
    files = [ContextFileRead(f"f{i}", text.encode(), "0" * 64) for i, text in enumerate(texts)]
    block = render_context_block(files)
    wrapper = smallest_free_n("</context-files-{}>", texts)
    assert block.endswith(f"</context-files-{wrapper}>\n")
    assert not any(f"</context-files-{wrapper}>" in text for text in texts)
    assert wrapper == 1 or any(f"</context-files-{wrapper - 1}>" in text for text in texts)
    for text in texts:
        n = smallest_free_n("</context-file-{}>", [text])
        assert f"</context-file-{n}>" not in text
        assert n == 1 or f"</context-file-{n - 1}>" in text
        assert f"\n</context-file-{n}>\n" in block
