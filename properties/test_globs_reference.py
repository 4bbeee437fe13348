"""The subject glob matches exactly the strings a reference regex translation matches (docs/decisions.md#operations)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.globs import glob_matches

PATTERNS = st.text(alphabet="ab/.*?-", max_size=12)
SUBJECTS = st.text(alphabet="ab/.*?-\n", max_size=14)


def reference(pattern: str) -> re.Pattern[str]:
    """``**`` → any run, ``*`` → a run without ``/``, ``?`` → one non-``/``, all else literal, read
    left to right; the whole subject must match."""
    parts: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**", index):
            parts.append(".*")
            index += 2
            continue
        char = pattern[index]
        parts.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
        index += 1
    return re.compile("".join(parts), re.DOTALL)


@settings(max_examples=600)
@given(PATTERNS, SUBJECTS)
def test_the_glob_agrees_with_the_reference_translation(pattern: str, subject: str) -> None:
    assert glob_matches(pattern, subject) == (reference(pattern).fullmatch(subject) is not None)


@settings(max_examples=300)
@given(PATTERNS, st.lists(st.sampled_from(["a", "b", "/", "-", "."]), max_size=8))
def test_a_pattern_built_to_match_does_match(pattern: str, pieces: list[str]) -> None:
    subject = "".join(pieces)
    built = pattern.replace("*", "").replace("?", "") + "**"
    assert glob_matches(built, built.replace("*", "") + subject)


@given(st.text(max_size=20))
def test_a_pattern_without_wildcards_matches_only_itself(text: str) -> None:
    literal = text.replace("*", "").replace("?", "")
    assert glob_matches(literal, literal)
    assert not glob_matches(literal, literal + "x")
