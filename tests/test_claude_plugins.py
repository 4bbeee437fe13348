"""``--plugin-dir`` on claude: checked, named, digested, copied without links (docs/adapters/claude.md#plugins)."""

from __future__ import annotations

import json
from pathlib import Path

from returns.result import Failure

from metaharness.pure.claude.plugins import PluginFile, PluginTree, plan_plugins, tree_digest
from metaharness.shell.claude.inputs import plugin_tree


def refusal(trees: tuple[PluginTree, ...]) -> str:
    result = plan_plugins(trees)
    assert isinstance(result, Failure)
    assert result.failure().code == "plugin-dir-unusable"
    return str(result.failure().message)


def test_the_manifest_names_the_plugin_else_the_basename(tmp_path: Path) -> None:
    named = tmp_path / "some-dir"
    (named / ".claude-plugin").mkdir(parents=True)
    (named / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "planner", "version": "2.0.1"}))
    (named / "skills").mkdir()
    (named / "skills" / "plan.md").write_text("# plan\n")
    (named / "link.md").symlink_to(named / "skills" / "plan.md")
    plain = tmp_path / "helper"
    plain.mkdir()
    (plain / "README.md").write_text("hi\n")
    copies = plan_plugins((plugin_tree(str(named)), plugin_tree(str(plain)))).unwrap()
    assert [(c.name, c.version) for c in copies] == [("planner", "2.0.1"), ("helper", None)]
    assert copies[0].skipped == ("link.md",)
    assert sorted(f.path for f in copies[0].files) == [".claude-plugin/plugin.json", "skills/plan.md"]
    assert copies[0].installed().source == f"{named} sha256 {copies[0].digest}"


def test_unusable_directories_are_refused_naming_why(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "file.tgz").write_bytes(b"x")
    (tmp_path / "alias").symlink_to(empty)
    assert "holds no readable regular file" in refusal((plugin_tree(str(empty)),))
    assert "not a directory" in refusal((plugin_tree(str(tmp_path / "file.tgz")),))
    assert "not a directory" in refusal((plugin_tree(str(tmp_path / "missing")),))
    assert "symbolic link" in refusal((plugin_tree(str(tmp_path / "alias")),))


def test_two_plugins_with_one_name_are_refused() -> None:
    files = (PluginFile("a.md", b"a", 0o644),)
    first = PluginTree("/x/tools", True, False, files)
    second = PluginTree("/y/tools", True, False, files)
    assert "named tools, like an earlier --plugin-dir" in refusal((first, second))


def test_the_digest_covers_paths_and_bytes_in_sorted_order() -> None:
    a, b = PluginFile("a", b"1", 0o644), PluginFile("b", b"2", 0o644)
    assert tree_digest((a, b)) == tree_digest((b, a))
    assert tree_digest((a, b)) != tree_digest((PluginFile("a", b"2", 0o644), PluginFile("b", b"1", 0o644)))
    assert tree_digest((PluginFile("ab", b"", 0o644),)) != tree_digest((PluginFile("a", b"b", 0o644),))
