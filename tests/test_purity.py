"""``metaharness.pure`` stays pure (docs/DEVELOPING.md, rules for pure/): importing any of its modules
pulls in no I/O, concurrency, randomness or CLI module, and its source reads no environment, file or
clock."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

PURE = Path(__file__).resolve().parent.parent / "pure"
FORBIDDEN_MODULES = (
    "subprocess",
    "socket",
    "asyncio",
    "threading",
    "click",
    "httpx",
    "random",
    "secrets",
    "metaharness.shell",
)
FORBIDDEN_SOURCE = re.compile(r"os\.environ|\bopen\(|time\.time\(|datetime\.now|os\.getenv|time\.monotonic\(")

_PROBE = """
import importlib, json, pkgutil, sys
import metaharness.pure as pure
forbidden = json.loads(sys.argv[1])
names = [info.name for info in pkgutil.walk_packages(pure.__path__, "metaharness.pure.")]
found = {}
for name in ["metaharness.pure", *names]:
    importlib.import_module(name)
    for module in forbidden:
        if module in sys.modules and module not in found:
            found[module] = name
print(json.dumps({"modules": names, "found": found}))
"""


def test_importing_every_pure_module_imports_nothing_impure() -> None:
    """Each forbidden module maps to the first pure module whose import brought it in."""
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(FORBIDDEN_MODULES)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(result.stdout)
    assert "metaharness.pure.options" in report["modules"]
    assert report["found"] == {}


def test_pure_source_reads_no_environment_file_or_clock() -> None:
    offences = [
        f"{path.relative_to(PURE.parent)}:{number}: {line.strip()}"
        for path in sorted(PURE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if FORBIDDEN_SOURCE.search(line)
    ]
    assert offences == []


def test_every_subfolder_of_pure_shell_and_vectors_is_a_package() -> None:
    folders = [
        folder
        for top in ("pure", "shell", "vectors")
        for folder in (PURE.parent / top).rglob("*")
        if folder.is_dir() and folder.name != "__pycache__"
    ]
    assert [str(folder) for folder in folders if not (folder / "__init__.py").is_file()] == []
