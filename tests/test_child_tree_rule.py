"""The shell modules that touch a tree the child can write while it runs (the hook channel, codex's
rollouts, the live loops, the ``--retain-dir`` copy, the subjects' link facts, the loop's tools,
``metaharness-eval``'s out directory) name no file by its path: every such operation goes through a directory
descriptor, ``metaharness.shell.child_tree``'s (docs/adapters/common.md#child-trees) or the loop's tools' own
(docs/loop.md#confinement). Read from the source's syntax tree, so a new ``open(path)`` in one of them fails
here."""

from __future__ import annotations

import ast
from pathlib import Path

SHELL = Path(__file__).resolve().parent.parent / "shell"
CHILD_TREE_MODULES = (
    "hook_channel.py",
    "wind_up.py",
    "codex/rollout.py",
    "codex/live.py",
    "codex/app_server.py",
    "gemini/config_home.py",
    "claude/live.py",
    "b10x/live.py",
    "workspace_snapshot.py",
    "tree_links.py",
    "loop/tools.py",
    "eval/out_tree.py",
)
BY_NAME = {
    "open", "os.open", "os.rename", "os.replace", "os.mkfifo", "os.mkdir", "os.makedirs", "os.unlink",
    "os.remove", "os.rmdir", "os.walk", "os.lstat", "os.stat", "os.listdir", "os.scandir", "os.readlink",
    "os.path.getmtime", "os.path.realpath", "os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.islink", "glob.glob",
    "shutil.copy", "shutil.copyfile", "shutil.copytree", "shutil.rmtree", "shutil.move", "Path",
    "open_regular", "read_regular",
}  # fmt: skip
DESCRIPTOR_KEYWORDS = {"dir_fd", "src_dir_fd", "dst_dir_fd"}
OPERATOR_SIDE = {
    ("wind_up.py", "_retain_file"): {"os.open"},
    ("wind_up.py", "_retain_folders"): {"os.mkdir", "os.path.isdir"},
    ("wind_up.py", "retain_copies"): {"os.mkdir", "os.open"},
    ("loop/tools.py", "_located"): {"os.open"},
    ("loop/tools.py", "_parent_fd"): {"os.open"},
    ("loop/tools.py", "program_on_path"): {"os.path.realpath"},
    ("loop/tools.py", "_walk_folder"): {"os.scandir"},
    ("loop/tools.py", "_listed"): {"os.listdir"},
    ("eval/out_tree.py", "open_out"): {"os.open"},
    ("eval/out_tree.py", "existing_out"): {"os.open"},
}
"""Calls on what the child cannot write: the operator's ``--retain-dir`` (the destination side), the loop's
canonical root itself and ``PATH``'s folders outside it, the open of ``metaharness-eval --out`` itself (a path
the operator names, held by its descriptor before any run); and the listings of a folder the tools hold open,
named by its descriptor (``os.scandir(fd)``, ``os.listdir(fd)``), which the syntax alone cannot tell."""


def dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return ""


def by_name_calls(module: str, source: str) -> list[str]:
    """Each call in ``module`` (its ``source``) that names a file by its path, as ``module:line function:
    call``, less the allowed ones."""
    tree = ast.parse(source)
    found: list[str] = []
    for function in (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)):
        allowed = OPERATOR_SIDE.get((module, function.name), set())
        for call in (node for node in ast.walk(function) if isinstance(node, ast.Call)):
            name = dotted(call.func)
            through_descriptor = any(keyword.arg in DESCRIPTOR_KEYWORDS for keyword in call.keywords)
            if name in BY_NAME and name not in allowed and not through_descriptor:
                found.append(f"{module}:{call.lineno} {function.name}: {name}")
    return found


def test_no_child_tree_module_opens_a_path_by_name() -> None:
    sources = {module: (SHELL / module).read_text(encoding="utf-8") for module in CHILD_TREE_MODULES}
    assert [call for module, source in sources.items() for call in by_name_calls(module, source)] == []


def test_the_rule_sees_a_by_name_open() -> None:
    """The check is not vacuous: the earlier hook channel's answer, which opened ``.writing.<key>`` by
    name, is caught; the same rename through descriptors is not."""
    source = (
        "import os\n"
        "def answer(responses, key):\n"
        "    os.open(os.path.join(responses, f'.writing.{key}'), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n"
        "    os.rename('a', 'b')\n"
        "    os.rename('a', 'b', src_dir_fd=3, dst_dir_fd=3)\n"
    )
    assert by_name_calls("hook_channel.py", source) == [
        "hook_channel.py:3 answer: os.open",
        "hook_channel.py:4 answer: os.rename",
    ]


def test_no_shell_module_removes_a_tree_with_shutil() -> None:
    """A run's scratch root (and an eval run's copy) is removed by ``child_tree.remove_tree``: Python
    3.11's ``shutil.rmtree`` recurses, so a tree the child made ~1,000 folders deep raised after the report."""
    found = [
        f"{path.relative_to(SHELL)}:{call.lineno}"
        for path in sorted(SHELL.rglob("*.py"))
        for call in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(call, ast.Call) and dotted(call.func) == "shutil.rmtree"
    ]
    assert found == []
