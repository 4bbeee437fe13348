"""Every time limit is named once, with its reason, in ``pure/budgets.py`` (docs/DEVELOPING.md#layout): no
other module of ``pure/`` or ``shell/`` defines a time-named constant or passes a literal number of
seconds to a timeout, a sleep or a wait."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUDGETS = ROOT / "pure" / "budgets.py"
TIME_NAME = re.compile(r"(^|_)(S|MS|SECONDS|TIMEOUT|GRACE|DEADLINE|INTERVAL|POLL)(_|$)|PER_SECOND")
TIMED_KEYWORDS = {"timeout", "timeout_s", "poll_interval", "grace"}
TIMED_CALLS = {"sleep", "wait", "settimeout", "communicate"}
UNITS = {("pure/duration.py", "_UNIT_SECONDS")}
"""Time-named constants that are no limit (a DURATION's units)."""


def _modules() -> list[tuple[str, ast.Module]]:
    paths = sorted([*(ROOT / "pure").rglob("*.py"), *(ROOT / "shell").rglob("*.py")])
    return [(str(path.relative_to(ROOT)), ast.parse(path.read_text())) for path in paths if path != BUDGETS]


def _assigned(node: ast.stmt) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    value = getattr(node, "value", None)
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "TypeVar":
        return []  # a type variable named S is no limit
    return [target.id for target in targets if isinstance(target, ast.Name)]


def _number(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value != 0


def test_no_module_but_budgets_defines_a_time_limit() -> None:
    found = {
        (name, where)
        for where, module in _modules()
        for node in module.body
        for name in _assigned(node)
        if TIME_NAME.search(name) and (where, name) not in UNITS
    }
    assert found == set()


def test_no_timeout_sleep_or_wait_is_given_a_literal_number() -> None:
    found = set()
    for where, module in _modules():
        for node in ast.walk(module):
            if not isinstance(node, ast.Call):
                continue
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if any(keyword.arg in TIMED_KEYWORDS and _number(keyword.value) for keyword in node.keywords):
                found.add((where, node.lineno))
            if callee in TIMED_CALLS and any(_number(argument) for argument in node.args):
                found.add((where, node.lineno))
    assert found == set()


def test_every_budget_states_its_reason() -> None:
    body = ast.parse(BUDGETS.read_text()).body
    unexplained = [
        name
        for node, following in zip(body, [*body[1:], None], strict=True)
        for name in _assigned(node)
        if not (isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant))
    ]
    assert unexplained == []
    assert not [node for node in body if isinstance(node, ast.Import | ast.ImportFrom) and node.module != "__future__"]
