"""How the CLI reads a verb's words before click converts them (docs/cli.md#run): the split at the first
``--`` that is not an option's value, and the scopes ``--write-scope`` names. A leaf, so ``run`` parses its
words without importing its stages (``benchmarks/bench_startup.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

WRITE_SCOPES = ("allowed", "partial-only", "denied")


def split_command_words(
    words: Sequence[str],
    valued: frozenset[str],
    optional: Mapping[str, tuple[frozenset[str], str]],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split a verb's words into its option words and the words after the first ``--`` that is not an
    option's value (docs/cli.md#verbs, ``-- AUDITOR_ARGS…``).

    ``valued`` names the options that take the next word as their value. An option in ``optional``
    takes the next word only when it is one of its values, else it is bare and reads as its bare
    value; either way it is rewritten ``--option=VALUE`` (docs/cli.md#run, ``--hermetic``).
    """
    out: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else None
        if word == "--":
            return tuple(out), tuple(words[index + 1 :])
        if word in optional:
            values, bare = optional[word]
            taken = following is not None and following in values
            out.append(f"{word}={following if taken else bare}")
            index += 2 if taken else 1
        elif word in valued and following is not None:
            out.extend((word, following))
            index += 2
        else:
            out.append(word)
            index += 1
    return tuple(out), ()
