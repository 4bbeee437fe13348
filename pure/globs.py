"""Subject globs (docs/decisions.md#operations): a pattern matched against the whole subject string.

``**`` matches any run of characters including ``/``; ``*`` any run without ``/``; ``?`` one
character other than ``/``; every other character is literal (no classes, no escapes). A pattern is
read left to right, so ``***`` is ``**`` then ``*``. The matcher runs the pattern as a small
automaton over the subject, one set of pattern positions per character, so no pattern is slow.
"""

from __future__ import annotations

_STARS = ("**", "*")


def glob_tokens(pattern: str) -> tuple[str, ...]:
    """The pattern as tokens: ``**``, ``*``, ``?`` or one literal character."""
    tokens: list[str] = []
    index = 0
    while index < len(pattern):
        width = 2 if pattern.startswith("**", index) else 1
        tokens.append(pattern[index : index + width])
        index += width
    return tuple(tokens)


def _closure(tokens: tuple[str, ...], positions: set[int]) -> set[int]:
    """Positions reachable without consuming a character (a star may match nothing)."""
    reached = set(positions)
    frontier = list(positions)
    while frontier:
        position = frontier.pop()
        if position < len(tokens) and tokens[position] in _STARS and position + 1 not in reached:
            reached.add(position + 1)
            frontier.append(position + 1)
    return reached


def _step(tokens: tuple[str, ...], positions: set[int], char: str) -> set[int]:
    """Positions after consuming ``char`` from each of ``positions``."""
    following: set[int] = set()
    for position in positions:
        if position == len(tokens):
            continue
        token = tokens[position]
        if token == "**" or (token == "*" and char != "/"):
            following.add(position)
        elif (token == "?" and char != "/") or token == char:
            following.add(position + 1)
    return _closure(tokens, following)


def glob_matches(pattern: str, subject: str) -> bool:
    """Whether ``pattern`` matches the whole of ``subject`` (docs/decisions.md#operations)."""
    tokens = glob_tokens(pattern)
    positions = _closure(tokens, {0})
    for char in subject:
        positions = _step(tokens, positions, char)
        if not positions:
            return False
    return len(tokens) in positions
