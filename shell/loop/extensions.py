"""Reading ``--skills-dir``, ``--agents-dir`` and ``--plugin-dir`` (docs/loop-extensions.md): the
directories are listed in name order, each file read once and parsed by
:mod:`metaharness.pure.loop.skills`; the first problem refuses the run, naming the file. The directories
are the operator's, read by name when the loop starts, before any tool runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from returns.result import Failure, Result, Success

from metaharness.pure.loop.skills import (
    FILE_CAP,
    PLUGIN_MANIFEST,
    Agent,
    Loaded,
    Skill,
    merge_skills,
    parse_agent,
    parse_skill,
    plugin_name,
)

T = TypeVar("T")


def _parsed(path: str, parse: Callable[[str, bytes], Result[T, str]]) -> Result[T, str]:
    """``path`` read once (up to one byte past the cap) and parsed, or why it cannot be read."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(FILE_CAP + 1)
    except OSError as error:
        return Failure(f"{path} cannot be read: {error.strerror or error}")
    return parse(path, raw)


def _directory(flag: str, path: str) -> Result[list[str], str]:
    if not os.path.isdir(path):
        return Failure(f"{flag} {path} is not a directory")
    try:
        return Success(sorted(os.listdir(path)))
    except OSError as error:
        return Failure(f"{flag} {path} cannot be listed: {error.strerror or error}")


def _read_each(
    flag: str, directory: str, file_of: Callable[[str], str | None], parse: Callable[[str, bytes], Result[T, str]]
) -> Result[tuple[T, ...], str]:
    """Each entry's file (``file_of`` a name, ``None``: skipped) parsed, in name order; the first problem refuses."""
    names = _directory(flag, directory)
    if isinstance(names, Failure):
        return names
    read: list[T] = []
    for path in (file_of(name) for name in names.unwrap()):
        if path is None:
            continue
        parsed = _parsed(path, parse)
        if isinstance(parsed, Failure):
            return parsed
        read.append(parsed.unwrap())
    return Success(tuple(read))


def read_skills(flag: str, directory: str, prefix: str = "") -> Result[tuple[Skill, ...], str]:
    """Each ``<directory>/<name>/SKILL.md`` in name order; a subdirectory without one is skipped."""

    def skill_file(name: str) -> str | None:
        path = os.path.join(directory, name, "SKILL.md")
        return path if os.path.isfile(path) else None

    return _read_each(flag, directory, skill_file, partial(parse_skill, prefix=prefix))


def read_agents(flag: str, directory: str, prefix: str = "") -> Result[tuple[Agent, ...], str]:
    """Each ``<directory>/<name>.md`` (a regular file) in name order."""

    def agent_file(name: str) -> str | None:
        path = os.path.join(directory, name)
        return path if name.endswith(".md") and os.path.isfile(path) else None

    return _read_each(flag, directory, agent_file, partial(parse_agent, prefix=prefix))


def load_extensions(
    skills_dirs: Sequence[str], agents_dirs: Sequence[str], plugin_dirs: Sequence[str]
) -> Result[Loaded, str]:
    """Skills and agents in load order: ``--skills-dir`` and ``--agents-dir`` first, then each
    ``--plugin-dir``'s ``skills`` and ``agents`` qualified by its plugin name."""
    skills: list[Skill] = []
    agents: list[Agent] = []
    for directory in skills_dirs:
        found = read_skills("--skills-dir", directory)
        if isinstance(found, Failure):
            return found
        skills.extend(found.unwrap())
    for directory in agents_dirs:
        listed = read_agents("--agents-dir", directory)
        if isinstance(listed, Failure):
            return listed
        agents.extend(listed.unwrap())
    for directory in plugin_dirs:
        if not os.path.isdir(directory):
            return Failure(f"--plugin-dir {directory} is not a directory")
        named = _parsed(os.path.join(directory, PLUGIN_MANIFEST), plugin_name)
        if isinstance(named, Failure):
            return named
        prefix = named.unwrap() + ":"
        if os.path.isdir(os.path.join(directory, "skills")):
            found = read_skills("--plugin-dir", os.path.join(directory, "skills"), prefix)
            if isinstance(found, Failure):
                return found
            skills.extend(found.unwrap())
        if os.path.isdir(os.path.join(directory, "agents")):
            listed = read_agents("--plugin-dir", os.path.join(directory, "agents"), prefix)
            if isinstance(listed, Failure):
                return listed
            agents.extend(listed.unwrap())
    kept, shadowed = merge_skills(tuple(skills))
    return Success(Loaded(kept, tuple(agents), shadowed))
