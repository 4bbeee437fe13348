"""docs/cli.md and the click command tree agree in both directions: the verb table names exactly the
verbs, and each verb's option table names exactly its options, arguments and ``--`` words."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from metaharness.shell.cli import cli

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def table_rows(section: str) -> list[list[str]]:
    """The cells of every body row of the tables in ``section``, split on unescaped pipes."""
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows[2:]]


def table_first_cells(section: str) -> list[str]:
    """The first cell of every body row, backticks removed."""
    return [row[0].strip("`") for row in table_rows(section)]


def sections() -> dict[str, str]:
    """Each ``## `verb``` section of the page by verb, and the ``## Verbs`` section as ``""``."""
    parts = re.split(r"^## ", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]
    found: dict[str, str] = {}
    for part in parts:
        title, _, body = part.partition("\n")
        found["" if title == "Verbs" else title.strip("`")] = body
    return found


def documented_names(cell: str) -> str:
    """``-p, --prompt TEXT`` → ``--prompt``; ``KIND`` → ``KIND``; ``-- AUDITOR_ARGS…`` → ``--``."""
    if cell.startswith("-- ") or cell == "--":
        return "--"
    longs = [word.rstrip(",") for word in cell.split() if word.startswith("--")]
    return longs[0] if longs else cell.split()[0]


def command_names(command: click.Command) -> set[str]:
    """The long option names, upper-case argument names and ``--`` (trailing words) of a command."""
    names: set[str] = set()
    for param in command.params:
        if isinstance(param, click.Option):
            names.add(next(flag for flag in param.opts if flag.startswith("--")))
        elif isinstance(param, click.Argument) and param.name is not None:
            names.add(param.name.upper())
    names.discard("--help")
    if type(command).__name__ == "_TrailingWordsCommand":
        names.add("--")
    return names


def test_the_verb_table_names_exactly_the_verbs_in_order() -> None:
    verbs = table_first_cells(sections()[""])
    assert verbs == list(cli.commands)


def test_every_verb_has_a_section() -> None:
    assert set(sections()) - {""} == set(cli.commands)


@pytest.mark.parametrize("verb", list(cli.commands))
def test_option_table_and_click_command_agree(verb: str) -> None:
    documented = [documented_names(cell) for cell in table_first_cells(sections()[verb])]
    assert len(documented) == len(set(documented)), "a name is documented twice"
    actual = command_names(cli.commands[verb])
    assert set(documented) - actual == set(), "documented but not in the CLI"
    assert actual - set(documented) == set(), "in the CLI but not documented"


@pytest.mark.parametrize("verb", list(cli.commands))
def test_documented_choices_are_the_click_choices(verb: str) -> None:
    options = {
        next(flag for flag in param.opts if flag.startswith("--")): param
        for param in cli.commands[verb].params
        if isinstance(param, click.Option)
    }
    for cells in table_rows(sections()[verb]):
        name = documented_names(cells[0].strip("`"))
        param = options.get(name)
        if param is None or not isinstance(param.type, click.Choice):
            continue
        documented = re.findall(r"`([^`]+)`", cells[1])
        assert sorted(documented) == sorted(param.type.choices), name
