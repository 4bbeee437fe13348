"""One name per concept (docs/DEVELOPING.md#one-structure-for-the-three-arms): ``Refused`` is the runner's
exception alone (``shell/staging.py``), and the desk's ``Answer``, ``Arm`` and ``Control`` have no twin elsewhere in
``pure/`` or ``shell/``; every other refusal is a ``Result`` value."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ONE_PLACE = {"Refused": "shell/staging.py", "Answer": "pure/decisions.py", "Arm": "pure/decisions.py",
             "HookAnswer": "pure/hook_channel.py", "Control": "pure/decisions.py"}  # fmt: skip


def test_each_concept_class_is_defined_in_one_place() -> None:
    found: dict[str, list[str]] = {name: [] for name in ONE_PLACE}
    for path in sorted([*(ROOT / "pure").rglob("*.py"), *(ROOT / "shell").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef | ast.Assign | ast.AnnAssign) and _named(node) in found:
                found[_named(node)].append(str(path.relative_to(ROOT)))
    assert found == {name: [where] for name, where in ONE_PLACE.items()}


def _named(node: ast.ClassDef | ast.Assign | ast.AnnAssign) -> str:
    if isinstance(node, ast.ClassDef):
        return node.name
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return next((target.id for target in targets if isinstance(target, ast.Name)), "")
