"""Dependencies point one way (docs/DEVELOPING.md#dependency-direction): the import graph of ``metaharness``
has no cycle, and no function imports a project module except the command lines' verb dispatch, which
defers a verb's modules for start-up time. Read from the source, so a cycle that only holds because an
import sits inside a function is still a cycle here."""

from __future__ import annotations

import ast
from pathlib import Path

from metaharness.pure.kind import KINDS

ROOT = Path(__file__).resolve().parent.parent
VERB_DISPATCH = frozenset(
    {"shell/cli.py", "shell/entry.py", "shell/loop_cli.py", "shell/loop/command.py"}
    | {f"shell/{kind}/adapter.py" for kind in KINDS}
)
"""The modules whose functions may import a verb's modules when the verb runs (``tests/test_cli_startup.py``)."""
DEFERRED = frozenset(
    {("shell/adapters.py", f"metaharness.shell.{kind}.adapter") for kind in KINDS}
    | {
        ("shell/claude/inputs.py", "metaharness.shell.catalogue_file"),
        ("shell/codex/inputs.py", "metaharness.pure.catalogue"),
        ("shell/codex/inputs.py", "metaharness.shell.catalogue_file"),
        ("shell/codex/run.py", "metaharness.shell.codex.app_server"),
        ("shell/wind_up.py", "metaharness.pure.run_view"),
    }
)
"""The other imports a function makes, each deferred to where it is needed so a refusal or a spawn does not wait on
it (``tests/test_cli_startup.py``): a run's own kind's live adapter, the ``--catalogue`` reader, codex's app-server
(a catalogue run's), the run view (a terminal's progress lines)."""


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for half in ("pure", "shell"):
        for path in sorted((ROOT / half).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found["metaharness." + ".".join(parts)] = path
    return found


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            lines |= {sub.lineno for sub in ast.walk(node) if hasattr(sub, "lineno")}
    return lines


def project_imports(tree: ast.Module, known: dict[str, Path]) -> list[tuple[ast.ImportFrom | ast.Import, str]]:
    """Every import of a project module outside ``if TYPE_CHECKING:``, with the module it names."""
    skipped = _type_checking_lines(tree)
    found: list[tuple[ast.ImportFrom | ast.Import, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom | ast.Import) or node.lineno in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            found += [(node, name) for name in names if name in known] or [(node, node.module)] * (node.module in known)
        elif isinstance(node, ast.Import):
            found += [(node, alias.name) for alias in node.names if alias.name in known]
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {target for _, target in project_imports(ast.parse(path.read_text()), known)} for name, path in known.items()}


def cycle_through(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as the modules along it, or ``None``."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target)) is not None:
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_import_graph_has_no_cycle() -> None:
    assert cycle_through(graph()) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The check above can fail: a graph with a loop through three modules is named."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert cycle_through(edges) == ["a", "b", "c", "a"]


def test_only_verb_dispatch_imports_inside_a_function() -> None:
    known = modules()
    deferred = []
    for path in known.values():
        relative = path.relative_to(ROOT).as_posix()
        if relative in VERB_DISPATCH:
            continue
        tree = ast.parse(path.read_text())
        at_top = {id(node) for node in tree.body}
        module_level = {id(sub) for node in tree.body if isinstance(node, ast.If | ast.Try) for sub in ast.walk(node)}
        for node, target in project_imports(tree, known):
            if id(node) not in at_top and id(node) not in module_level and (relative, target) not in DEFERRED:
                deferred.append(f"{relative}:{node.lineno} imports {target}")
    assert deferred == []
