"""No kind literal outside the kind's own folders and the registries.

The rule: in ``pure/`` and ``shell/``, a string constant whose whole value is a kind's name (``"claude"``,
``"codex"``, ``"b10x"``) appears only in that kind's own folders (``pure/<kind>/``, ``shell/<kind>/``)
and in the registries (``pure/kind.py``, which defines ``Kind``, ``pure/adapters.py``, ``pure/replays.py``,
``shell/adapters.py``). Prose that mentions a kind (a
refusal's message, help text, a docstring) is not a kind literal; a shared module that needs to know
something about a kind asks the registry.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from metaharness.pure.adapters import adapter_of
from metaharness.pure.kind import KINDS, Kind
from metaharness.pure.replays import replay_of
from metaharness.shell.adapters import live_adapter_of

ROOT = Path(__file__).resolve().parent.parent
REGISTRIES = frozenset({"pure/kind.py", "pure/adapters.py", "pure/replays.py", "shell/adapters.py"})


def kind_literals(source: str) -> list[tuple[int, str]]:
    """(line, kind) of every string constant in ``source`` whose whole value is a kind's name."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in KINDS
    ]


def allowed(relative: str, kind: str) -> bool:
    """A kind may be named in its own folders and in the registries."""
    return relative in REGISTRIES or relative.startswith((f"pure/{kind}/", f"shell/{kind}/"))


def stray_literals() -> list[str]:
    strays = []
    for folder in ("pure", "shell"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            strays += [
                f"{relative}:{line}: {kind!r}"
                for line, kind in kind_literals(path.read_text(encoding="utf-8"))
                if not allowed(relative, kind)
            ]
    return strays


def test_no_kind_literal_outside_its_folders_and_the_registries() -> None:
    assert stray_literals() == []


def test_the_scan_finds_a_kind_literal_and_passes_prose() -> None:
    """The scan above can fail: a comparison with a kind's name is found, a message naming one is not."""
    source = 'if kind == "codex":\n    message = "codex needs a prompt"\n'
    assert kind_literals(source) == [(1, "codex")]
    assert not allowed("pure/options.py", "codex")
    assert allowed("pure/codex/launch.py", "codex") and not allowed("pure/codex/launch.py", "claude")


@pytest.mark.parametrize("kind", KINDS)
def test_each_registry_entry_is_the_kinds_own_adapter(kind: Kind) -> None:
    """The registries hand out the adapter defined in the kind's own folder, under its own name."""
    adapter = adapter_of(kind)
    assert adapter.kind == kind
    assert replay_of(kind).__module__ == f"metaharness.pure.{kind}.replay"
    assert type(live_adapter_of(kind)).__module__ == f"metaharness.shell.{kind}.adapter"
