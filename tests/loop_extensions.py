"""Fixtures of the loop's extensions for tests (docs/loop-extensions.md): skills, plugin directories,
hook programs and hooks files written under a test's temporary directory."""

from __future__ import annotations

import json
from pathlib import Path


def skill(directory: Path, name: str, description: str, body: str) -> None:
    (directory / name).mkdir(parents=True)
    (directory / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}")


def plugin(root: Path, name: str, directory_name: str | None = None) -> Path:
    """A plugin directory ``root/<directory_name or name>`` named ``name`` with one skill ``planning``
    and one agent ``reviewer``."""
    directory = root / (directory_name or name)
    (directory / ".claude-plugin").mkdir(parents=True)
    (directory / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": name}))
    skill(directory / "skills", "planning", "Plan before you write.", "Write the plan first, then the code.\n")
    (directory / "agents").mkdir()
    (directory / "agents" / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews.\ntools: Read, Grep\n---\n")
    return directory


def hook_program(tmp_path: Path, name: str, body: str, seen: Path | None = None) -> str:
    """A Python hook program ``<name>.py``; it appends the document it read to ``<name>.seen`` in ``seen``
    (beside the program when not given)."""
    path = tmp_path / f"{name}.py"
    seen = (seen or tmp_path) / f"{name}.seen"
    path.write_text(
        "import json, sys\n"
        "document = sys.stdin.read()\n"
        f"open({str(seen)!r}, 'a').write(document)\n" + body
    )
    return str(path)


def hooks_file(tmp_path: Path, hooks: list[dict]) -> str:
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps({"version": 1, "hooks": hooks}))
    return str(path)
