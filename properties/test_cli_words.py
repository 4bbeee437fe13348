"""Properties of the command-line grammar (docs/cli.md#run): words after the first ``--`` that is not
an option's value are handed on verbatim; ``--hermetic`` takes the next word only when it is a mode;
and no word sequence makes the CLI raise instead of refusing with one ``usage`` line."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr

import click
from hypothesis import given, settings
from hypothesis import strategies as st

from metaharness.pure.command_words import split_command_words
from metaharness.pure.modes import HERMETIC_MODES
from metaharness.shell.cli import cli, run_cli

VALUED = frozenset({"-p", "--prompt", "--model", "--frame"})
OPTIONAL = {"--hermetic": (frozenset(HERMETIC_MODES), "on")}
WORDS = st.sampled_from(
    ["--", "--hermetic", "on", "off", "strict", "loose", "-p", "--prompt", "--model", "--frame", "b10x", "x",
     "--audit", "--hermetic=on", "-px"]
)


@settings(max_examples=300)
@given(st.lists(WORDS, max_size=12))
def test_split_walks_the_words_as_the_grammar_reads_them(words: list[str]) -> None:
    """Each word is kept in order; an option's value is never taken for the separator; a bare
    ``--hermetic`` reads as ``on`` and takes the next word only when it is a mode; the words after the
    separator come back verbatim, and none when there is no separator."""
    options, trailing = split_command_words(words, VALUED, OPTIONAL)
    index = 0
    out = iter(options)
    separated = False
    while index < len(words):
        word = words[index]
        if word == "--":
            assert trailing == tuple(words[index + 1 :])
            separated = True
            break
        rewritten = next(out)
        following = words[index + 1] if index + 1 < len(words) else None
        if word == "--hermetic":
            mode = following if following in HERMETIC_MODES else "on"
            assert rewritten == f"--hermetic={mode}"
            index += 2 if following in HERMETIC_MODES else 1
        elif word in VALUED and following is not None:
            assert (rewritten, next(out)) == (word, following)
            index += 2
        else:
            assert rewritten == word
            index += 1
    assert next(out, None) is None
    if not separated:
        assert trailing == ()


PARSE_WORDS = st.sampled_from(
    ["claude", "codex", "b10x", "gemini", "--", "-p", "task", "--hermetic", "strict", "--hermetic=on",
     "--decisions", "ask", "observe", "--max-turns", "0", "2", "x", "--write-scope", "a=allowed", "a=b",
     "--plugin", "r@n@p", "--credentials", "loopback", "--frame", "--render", "--contract", "--transcript",
     "--run", "--from", "--to", "trace-ir", "--catalogue", "--writable", "--no-such", "--model-endpoint"]
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(cli.commands)), st.lists(PARSE_WORDS, max_size=8))
def test_parsing_any_words_either_succeeds_or_is_a_usage_error(verb: str, words: list[str]) -> None:
    command = cli.commands[verb]
    try:
        command.make_context(verb, list(words), parent=click.Context(cli, info_name="metaharness"))
    except click.UsageError:
        pass


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["capabilities", "audit", "project", "launch", "--version", ""]),
    st.lists(st.sampled_from(["claude", "b10x", "--render", "--json", "--spec", "s", "--", "--to", "otel",
                              "missing-file.jsonl", "--from", "codex", "-x"]), max_size=6),
)
def test_invoking_never_raises_and_refuses_with_one_line(verb: str, words: list[str]) -> None:
    stderr = io.StringIO()
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    saved = sys.stdout
    sys.stdout = stdout
    try:
        with redirect_stderr(stderr):
            code = run_cli([verb, *words] if verb else words)
    finally:
        sys.stdout = saved
    assert code in (0, 2)
    if code == 2:
        lines = stderr.getvalue().splitlines()
        assert len(lines) == 1
        assert lines[0].startswith("metaharness: ")
