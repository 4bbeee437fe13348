"""The import package ``src/metaharness`` links the top-level ``pure/``, ``shell/`` and ``vectors/``
folders: an editable install imports them where they are, and a plain wheel ships all three, the
conformance vectors included (docs/DEVELOPING.md#layout)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import metaharness.pure
import metaharness.shell
import metaharness.vectors

ROOT = Path(__file__).resolve().parent.parent
LINKED = ("pure", "shell", "vectors")


def shipped(folder: str) -> set[str]:
    """Every file of a top-level folder as the wheel names it, caches left out."""
    return {
        f"metaharness/{path.relative_to(ROOT).as_posix()}"
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_import_package_is_the_top_level_folders() -> None:
    for folder in LINKED:
        assert (ROOT / "src" / "metaharness" / folder).resolve() == ROOT / folder
    imported = (metaharness.pure, metaharness.shell, metaharness.vectors)
    assert [Path(module.__file__ or "").resolve().parent for module in imported] == [ROOT / f for f in LINKED]


def test_a_plain_wheel_ships_pure_shell_and_the_vectors(tmp_path: Path) -> None:
    """The wheel is built from a copy of the checkout's package files, links kept as links."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    left_out = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in (*LINKED, "src"):
        shutil.copytree(ROOT / folder, source / folder, symlinks=True, ignore=left_out)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("metaharness-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "metaharness/__init__.py" in names
    for folder in LINKED:
        missing = shipped(folder) - names
        assert not missing, sorted(missing)[:5]
    assert "metaharness/vectors/codex/README.md" in names
