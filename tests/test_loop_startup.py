"""``b10x-harness --version`` starts light: metaharness probes ``<program> --version`` beside every
spawn (docs/adapters/b10x.md#program-and-version), so the answer is the package's own ``__version__`` (which its
installed metadata is built from), read before the command line, the wires, the tools, the HTTP client or even
``importlib.metadata`` are imported."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = str(Path(sys.executable).parent / "b10x-harness")
HEAVY = ("httpx", "httpcore", "click", "msgspec", "returns", "metaharness.pure.wires", "metaharness.pure.loop",
         "metaharness.shell.loop", "importlib.metadata")  # fmt: skip
LIGHT = frozenset({"metaharness.shell.loop", "metaharness.shell.loop.version"})
"""The loop package's docstring-only ``__init__`` and the leaf that answers ``--version`` (the package's ``__version__``)."""


def imported_by(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the installed ``b10x-harness *args`` with ``PYTHONPROFILEIMPORTTIME``; the modules it imported."""
    done = subprocess.run(
        [HARNESS, *args], capture_output=True, text=True, check=False, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"},
    )  # fmt: skip
    modules = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return done, modules


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m not in LIGHT and any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_imports_no_http_client_wire_or_command_line(flag: str) -> None:
    done, modules = imported_by(flag)
    assert done.returncode == 0
    assert done.stdout == f"b10x-harness {importlib.metadata.version('metaharness')}\n"
    assert "metaharness.shell.loop_cli" in modules
    assert heavy(modules) == []


def test_help_still_lists_the_version_option() -> None:
    done, modules = imported_by("--help")
    assert done.returncode == 0 and "-V, --version" in done.stdout
    assert "click" in modules


def test_run_imports_the_loop() -> None:
    """The measurement above can fail: ``run`` does import the command line, the loop and its HTTP client (``h11``
    beneath the loop's own, not a general client: docs/loop.md#transport)."""
    done, modules = imported_by("run", "--json", "--model", "m")
    assert done.returncode == 1 and '"kind":"refused"' in done.stdout
    assert {"click", "h11", "metaharness.shell.loop.http_client", "metaharness.shell.loop.command",
            "metaharness.pure.wires.neutral"} <= modules  # fmt: skip
    assert not {"httpx", "httpcore", "ssl"} & modules
