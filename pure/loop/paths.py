"""Lexical path checks and write scope (docs/loop.md#confinement); the filesystem half lives in the shell."""

from __future__ import annotations

import re
from functools import lru_cache

import msgspec
from returns.result import Failure, Result, Success

SCOPES = ("allowed", "partial-only", "denied")
IMPLICIT_RULE = (".git/**", "denied")


def outside(path: str) -> str:
    """The model-facing text for a path outside the workspace."""
    return f"`{path}` is outside the workspace"


def confine(path: str, root: str) -> Result[str, str]:
    """The path relative to ``root`` (``.`` for the root itself), or the refusal text.

    Non-empty, no NUL; absolute only lexically inside the canonical root; any ``..`` refused;
    ``.`` and repeated ``/`` dropped. Never touches the filesystem.
    """
    if not path or "\0" in path:
        return Failure(outside(path))
    parts = path.split("/")
    if ".." in parts:
        return Failure(f"`{path}` contains `..`; name paths from the workspace root")
    if path.startswith("/"):
        root_parts = [p for p in root.split("/") if p]
        given = [p for p in parts if p not in ("", ".")]
        if given[: len(root_parts)] != root_parts:
            return Failure(outside(path))
        kept = given[len(root_parts) :]
    else:
        kept = [p for p in parts if p not in ("", ".")]
    return Success("/".join(kept) if kept else ".")


class ScopeRule(msgspec.Struct, frozen=True):
    """One ``--write-scope GLOB=SCOPE`` rule."""

    glob: str
    scope: str


def parse_scope_rule(text: str) -> Result[ScopeRule, str]:
    """``GLOB=SCOPE`` split at the last ``=``; the scope one of ``allowed``, ``partial-only``, ``denied``."""
    glob, sep, scope = text.rpartition("=")
    if not sep or not glob or scope not in SCOPES:
        return Failure(f"--write-scope expects GLOB=SCOPE with SCOPE one of allowed, partial-only, denied; got `{text}`")
    return Success(ScopeRule(glob, scope))


@lru_cache(maxsize=256)
def _glob_pattern(glob: str) -> re.Pattern[str]:
    out: list[str] = []
    segments = glob.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        for char in segment:
            out.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
        if not last:
            out.append("/")
    pattern = "".join(out)
    if pattern.endswith("/.*"):
        pattern = pattern[:-3] + "(?:/.*)?"
    return re.compile(pattern + r"\Z")


def glob_matches(glob: str, path: str) -> bool:
    """``*``/``?`` within a segment, ``**`` across segments (docs/loop.md#confinement)."""
    return _glob_pattern(glob).match(path) is not None


def scope_refusal(path: str, relative: str, rules: tuple[ScopeRule, ...], tool: str) -> str | None:
    """First matching rule wins, the implicit ``.git/**=denied`` last; ``None`` when ``tool`` may write."""
    for rule in (*rules, ScopeRule(*IMPLICIT_RULE)):
        if glob_matches(rule.glob, relative):
            if rule.scope == "allowed" or (rule.scope == "partial-only" and tool == "file_edit"):
                return None
            return f"`{path}` is outside this run's write scope (`{rule.glob}`: {rule.scope})"
    return None
