"""No function in ``pure/`` or ``shell/`` is longer than 60 lines, its signature and docstring included (a
decision, and what the shell does with it, reads in one screen; docs/DEVELOPING.md)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LONGEST = 60


def test_every_function_in_pure_and_shell_is_at_most_60_lines() -> None:
    longer = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for half in ("pure", "shell")
        for path in sorted((ROOT / half).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LONGEST
    ]
    assert longer == []
