"""Where Codex 0.171.0 finds skills, and what a run reports about them (docs/vendor-facts.md).

Codex loads every ``<root>/<name>/SKILL.md`` under its skill roots into the model's instructions:
``$HOME/.agents/skills``, and ``<dir>/.agents/skills`` for the working directory and, inside a git
repository, each ancestor up to the repository's root (the directory holding ``.git``). No config
key of the scratch ``config.toml`` turns that off, so a found skill is named in ``ambient_inputs`` and
makes H2 (settings sources are excluded) ``unavailable``. In a confined view (docs/confinement.md) the
caller's home is an empty tmpfs and the working directory's ancestors are not bound, so only the
working directory's own root is read there.
"""

from __future__ import annotations

import posixpath

SKILLS_DIR = ".agents/skills"
SKILL_FILE = "SKILL.md"


def skill_roots(home: str | None, cwd: str | None, repo_root: str | None, confined: bool = False) -> tuple[str, ...]:
    """The directories the pinned Codex reads skills from: home first, then the working directory
    and its ancestors up to ``repo_root`` (the working directory alone outside a repository). A run
    in the scratch work directory (``cwd`` ``None``) has only the home root: that directory is empty.
    A ``confined`` run reads only the working directory's own root: the rest is outside its view."""
    if confined:
        return () if cwd is None else (posixpath.join(cwd, SKILLS_DIR),)
    roots = [posixpath.join(home, SKILLS_DIR)] if home else []
    directory = cwd
    while directory is not None:
        roots.append(posixpath.join(directory, SKILLS_DIR))
        parent = posixpath.dirname(directory)
        directory = None if repo_root is None or directory == repo_root or parent == directory else parent
    return tuple(dict.fromkeys(roots))


def skill_ambient(found: tuple[str, ...]) -> tuple[str, ...]:
    """One ``ambient_inputs`` entry per ``SKILL.md`` found under a skill root."""
    return tuple(f"codex skill loaded into the model's instructions: {path}" for path in found)


def skills_h2_why(found: tuple[str, ...]) -> str | None:
    """Why H2 is ``unavailable`` on a codex run that found skills, or ``None`` when it found none."""
    if not found:
        return None
    return (
        "codex loads skills from $HOME/.agents/skills and <cwd>/.agents/skills whatever config.toml says: "
        + ", ".join(found)
    )
