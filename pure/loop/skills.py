"""Skills, agents and plugins the loop loads (docs/loop-extensions.md): parsing the files the shell
read, the first-wins merge of skill names, and the standing instruction's skill lines.

A skill is ``<dir>/<name>/SKILL.md``, an agent ``<dir>/<name>.md``; both open with a frontmatter
fenced by ``---`` lines holding only top-level ``key: value`` lines. A plugin directory adds its
``skills`` and ``agents`` with names qualified ``<plugin>:<name>``, ``<plugin>`` the ``name`` of its
``.claude-plugin/plugin.json``. Every refusal names the file.
"""

from __future__ import annotations

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import decode_bounded

FILE_CAP = 256 * 1024
SKILL_KEYS = ("name", "description")
AGENT_KEYS = ("name", "description", "tools")
AGENT_TOOLS = ("Read", "Grep", "Glob", "Bash", "Write", "Edit", "LS")
SKILLS_HEADING = "Skills available to you; load one with the skill tool before you follow it:"
FENCE = "---"
PLUGIN_MANIFEST = ".claude-plugin/plugin.json"
"""Where a plugin directory names itself."""


class Skill(msgspec.Struct, frozen=True):
    """A loaded skill: its (qualified) name, description and body text."""

    name: str
    description: str
    body: str


class Agent(msgspec.Struct, frozen=True):
    """A loaded agent: its (qualified) name, description and the tools it may use (empty: unstated)."""

    name: str
    description: str
    tools: tuple[str, ...]


class Loaded(msgspec.Struct, frozen=True):
    """What the directories gave, in load order, and the ``skill-shadowed`` warning messages."""

    skills: tuple[Skill, ...]
    agents: tuple[Agent, ...]
    shadowed: tuple[str, ...]


def _text(label: str, raw: bytes) -> Result[str, str]:
    if len(raw) > FILE_CAP:
        return Failure(f"{label} is over the {FILE_CAP} byte bound")
    try:
        return Success(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return Failure(f"{label} is not UTF-8")


def frontmatter(label: str, raw: bytes, keys: tuple[str, ...]) -> Result[tuple[dict[str, str], str], str]:
    """The ``key: value`` pairs between the opening and closing ``---`` lines, and the body after them;
    a key outside ``keys``, a line that is not ``key: value`` or a missing fence refuses."""
    decoded = _text(label, raw)
    if isinstance(decoded, Failure):
        return decoded
    lines = decoded.unwrap().split("\n")
    if lines[0].rstrip("\r") != FENCE:
        return Failure(f"{label} does not open with a `---` frontmatter fence")
    closing = next((index for index in range(1, len(lines)) if lines[index].rstrip("\r") == FENCE), None)
    if closing is None:
        return Failure(f"{label} has no closing `---` frontmatter fence")
    fields: dict[str, str] = {}
    for line in lines[1:closing]:
        text = line.rstrip("\r")
        if not text.strip():
            continue
        key, colon, value = text.partition(":")
        if not colon or key != key.strip() or not key:
            return Failure(f"{label}: frontmatter line `{text}` is not a top-level `key: value` line")
        if key not in keys:
            return Failure(f"{label}: frontmatter key `{key}` is not one of {', '.join(keys)}")
        fields[key] = value.strip()
    return Success((fields, "\n".join(lines[closing + 1 :])))


def _required(label: str, fields: dict[str, str], key: str) -> Result[str, str]:
    value = fields.get(key, "")
    return Success(value) if value else Failure(f"{label}: frontmatter key `{key}` is required")


def _described(label: str, raw: bytes, keys: tuple[str, ...]) -> Result[tuple[dict[str, str], str, str, str], str]:
    """A skill's or agent's frontmatter fields, its ``name`` and ``description`` (both required, in that order)
    and the body that follows the fence."""
    return frontmatter(label, raw, keys).bind(
        lambda parsed: Result.do(
            (parsed[0], name, description, parsed[1])
            for name in _required(label, parsed[0], "name")
            for description in _required(label, parsed[0], "description")
        )
    )


def parse_skill(label: str, raw: bytes, prefix: str = "") -> Result[Skill, str]:
    """A ``SKILL.md``: ``name`` and ``description`` required; the body is what follows the fence."""
    return _described(label, raw, SKILL_KEYS).map(
        lambda described: Skill(prefix + described[1], described[2], described[3])
    )


def parse_agent(label: str, raw: bytes, prefix: str = "") -> Result[Agent, str]:
    """An agent file: ``name``, ``description`` required; ``tools`` a comma list of known tool names."""
    described = _described(label, raw, AGENT_KEYS)
    if isinstance(described, Failure):
        return described
    fields, name, description, _body = described.unwrap()
    tools: tuple[str, ...] = ()
    if "tools" in fields:
        tools = tuple(tool.strip() for tool in fields["tools"].split(","))
        if not any(tools) or "" in tools:
            return Failure(f"{label}: `tools` must name at least one tool, comma-separated")
        unknown = next((tool for tool in tools if tool not in AGENT_TOOLS), None)
        if unknown is not None:
            return Failure(f"{label}: `tools` names `{unknown}`, not one of {', '.join(AGENT_TOOLS)}")
    return Success(Agent(prefix + name, description, tools))


def plugin_name(label: str, raw: bytes) -> Result[str, str]:
    """The ``name`` of a ``.claude-plugin/plugin.json``: a non-empty string without ``:``."""
    decoded = _text(label, raw)
    if isinstance(decoded, Failure):
        return decoded
    try:
        document = decode_bounded(decoded.unwrap())
    except msgspec.DecodeError:
        return Failure(f"{label} is not JSON")
    name = document.get("name") if isinstance(document, dict) else None
    if not isinstance(name, str) or not name or ":" in name:
        return Failure(f"{label} has no `name` string (non-empty, without `:`)")
    return Success(name)


def merge_skills(found: tuple[Skill, ...]) -> tuple[tuple[Skill, ...], tuple[str, ...]]:
    """The first skill of a name wins; each later one is a ``skill-shadowed`` message."""
    kept: dict[str, Skill] = {}
    shadowed: list[str] = []
    for skill in found:
        if skill.name in kept:
            shadowed.append(f"skill `{skill.name}` is defined again and the first definition is kept")
        else:
            kept[skill.name] = skill
    return tuple(kept.values()), tuple(shadowed)


def skill_lines(skills: tuple[Skill, ...]) -> tuple[str, ...]:
    """The standing instruction's skill lines: the heading, then `` - `<name>` — <description> `` each."""
    if not skills:
        return ()
    return (SKILLS_HEADING, *(f"- `{skill.name}` — {skill.description}" for skill in skills))
