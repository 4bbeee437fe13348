"""No kind literal outside the kind's own folders and the registries.

The rule: in ``pure/`` and ``shell/``, a string constant whose whole value is a kind's name and that is used
as a kind appears only in that kind's own folders (``pure/<kind>/``, ``shell/<kind>/``) and in the registries
(``pure/kind.py``, which defines ``Kind``, ``pure/adapters.py``, ``pure/replays.py``, ``shell/adapters.py``).
"Used as a kind" is keyed on where the constant stands, not on its spelling, so a kind named after a common
word (``echo``, ``run``) does not clash with the word used as itself: compared with, matched against or
assigned to a name ``kind``/``KIND``/``*_kind``/``adapter``; passed as a ``kind=`` or ``adapter=`` keyword or as the ``kind`` parameter
of a project function; returned by, or annotated as, a ``Kind``; a key of a mapping
annotated by kind. Prose that mentions a kind (a refusal's message, help text, a docstring) is not a kind
literal; a shared module that needs to know something about a kind asks the registry
(docs/DEVELOPING.md#adding-a-fourth-kind).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from metaharness.pure.adapters import adapter_of
from metaharness.pure.kind import KINDS, Kind
from metaharness.pure.replays import replay_of
from metaharness.shell.adapters import live_adapter_of

ROOT = Path(__file__).resolve().parent.parent
REGISTRIES = frozenset({"pure/kind.py", "pure/adapters.py", "pure/replays.py", "shell/adapters.py"})
KIND_TYPE = re.compile(r"\bKind\b")
KIND_NAME = re.compile(r"^(?:kind|KIND|adapter|ADAPTER|\w+_kind|\w+_KIND)$")

KindParameters = dict[str, frozenset[int]]
"""A project function's name → the positions of its parameters that are a kind."""


def _is_kind_name(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return KIND_NAME.match(name) is not None


def _is_kind_type(annotation: ast.expr | None) -> bool:
    return annotation is not None and KIND_TYPE.search(ast.unparse(annotation)) is not None


def _constants(node: ast.AST | None) -> Iterator[ast.Constant]:
    """The string constants ``node`` is, or (a tuple, list, set, conditional) holds as its values."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _constants(element)
    elif isinstance(node, ast.IfExp):
        yield from _constants(node.body)
        yield from _constants(node.orelse)


def kind_parameters(sources: list[str]) -> KindParameters:
    """Every function of ``sources`` with a parameter named ``kind`` or annotated ``Kind``."""
    found: dict[str, set[int]] = {}
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = [*node.args.posonlyargs, *node.args.args]
                offset = 1 if arguments and arguments[0].arg in ("self", "cls") else 0
                for position, argument in enumerate(arguments[offset:]):
                    if argument.arg == "kind" or _is_kind_type(argument.annotation):
                        found.setdefault(node.name, set()).add(position)
    return {name: frozenset(positions) for name, positions in found.items()}


def _called(node: ast.Call) -> str:
    function = node.func
    return function.id if isinstance(function, ast.Name) else function.attr if isinstance(function, ast.Attribute) else ""


def _used_as_kind(node: ast.AST, parameters: KindParameters) -> Iterator[ast.Constant]:
    """The constants ``node`` uses as a kind (one level: the walk visits every node)."""
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        if any(_is_kind_name(operand) for operand in operands):
            for operand in operands:
                yield from _constants(operand)
    elif isinstance(node, ast.Match) and _is_kind_name(node.subject):
        for case in node.cases:
            for pattern in ast.walk(case.pattern):
                if isinstance(pattern, ast.MatchValue):
                    yield from _constants(pattern.value)
    elif isinstance(node, ast.Call):
        yield from (c for keyword in node.keywords if keyword.arg in ("kind", "adapter") for c in _constants(keyword.value))
        positions = parameters.get(_called(node), frozenset())
        yield from (c for position, arg in enumerate(node.args) if position in positions for c in _constants(arg))
    elif isinstance(node, ast.Assign) and any(_is_kind_name(target) for target in node.targets):
        yield from _constants(node.value)
    elif isinstance(node, ast.AnnAssign) and (_is_kind_name(node.target) or _is_kind_type(node.annotation)):
        yield from _constants(node.value)
        if isinstance(node.value, ast.Dict):
            yield from (c for key in node.value.keys for c in _constants(key))
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_kind_type(node.returns):
        yield from (c for inner in ast.walk(node) if isinstance(inner, ast.Return) for c in _constants(inner.value))


def kind_literals(source: str, kinds: frozenset[str], parameters: KindParameters) -> list[tuple[int, str]]:
    """(line, kind) of every string constant in ``source`` whose whole value is a kind's name and that is
    used as a kind."""
    found = {
        (constant.lineno, constant.col_offset, constant.value)
        for node in ast.walk(ast.parse(source))
        for constant in _used_as_kind(node, parameters)
        if constant.value in kinds
    }
    return [(line, value) for line, _column, value in sorted(found)]


def allowed(relative: str, kind: str) -> bool:
    """A kind may be named in its own folders and in the registries."""
    return relative in REGISTRIES or relative.startswith((f"pure/{kind}/", f"shell/{kind}/"))


def stray_literals() -> list[str]:
    paths = sorted(path for folder in ("pure", "shell") for path in (ROOT / folder).rglob("*.py"))
    sources = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in paths}
    parameters = kind_parameters(list(sources.values()))
    return [
        f"{relative}:{line}: {kind!r}"
        for relative, source in sources.items()
        for line, kind in kind_literals(source, frozenset(KINDS), parameters)
        if not allowed(relative, kind)
    ]


def test_no_kind_literal_outside_its_folders_and_the_registries() -> None:
    assert stray_literals() == []


def test_the_scan_finds_a_kind_literal_and_passes_prose() -> None:
    """The scan above can fail: a comparison with a kind's name is found, a message naming one is not."""
    source = 'if kind == "codex":\n    message = "codex needs a prompt"\n'
    assert kind_literals(source, frozenset(KINDS), {}) == [(1, "codex")]
    assert not allowed("pure/options.py", "codex")
    assert allowed("pure/codex/launch.py", "codex") and not allowed("pure/codex/launch.py", "claude")


def test_a_kind_named_after_a_common_word_clashes_only_where_it_is_used_as_a_kind() -> None:
    """A kind ``echo`` is found where a shared module branches on it, looks it up, passes it or returns it
    as a kind, and not where ``echo`` is the word itself (a program's name in an argv, a tool's name)."""
    lookups = kind_parameters(["def adapter_of(kind: Kind) -> Adapter: ...\ndef memory_row(k: Kind, row: str): ..."])
    as_kind = (
        'if options.kind in ("b10x", "echo"):\n    pass\n'
        'match kind:\n    case "claude" | "echo":\n        pass\n'
        'adapter_of("echo")\nmemory_row("echo", "H11")\nRunOptions(kind="echo")\nKIND = "echo"\n'
        'def dialect(path: str) -> Kind:\n    return "claude" if path else "echo"\n'
        'ROWS: Mapping[Kind, str] = {"echo": "x"}\n'
    )
    assert [line for line, _kind in kind_literals(as_kind, frozenset({"echo"}), lookups)] == [1, 4, 6, 7, 8, 9, 11, 12]
    as_word = (
        'argv = ["echo", "hi"]\nsubprocess.run(("echo", name))\nif tool == "echo":\n    pass\n'
        'TOOLS = {"echo": "shell"}\nrender("echo")\nmessage = "echo is not carried"\n'
    )
    assert kind_literals(as_word, frozenset({"echo"}), lookups) == []


@pytest.mark.parametrize("kind", KINDS)
def test_each_registry_entry_is_the_kinds_own_adapter(kind: Kind) -> None:
    """The registries hand out the adapter defined in the kind's own folder, under its own name."""
    adapter = adapter_of(kind)
    assert adapter.kind == kind
    assert replay_of(kind).__module__ == f"metaharness.pure.{kind}.replay"
    assert type(live_adapter_of(kind)).__module__ == f"metaharness.shell.{kind}.adapter"
