"""docs/cli.md#run's carriage table held to what the program emits: every ✗ cell (and every "not X" / "X only"
cell) is the refusal ``<option>-not-carried`` the installed ``metaharness run`` prints with exit 2 and nothing on
stdout, and every ✓ cell passes stage 3; plus the stage order of docs/hermetic.md#refusal-order on the seventeen-file
case, on every kind. gemini's lists in docs/adapters/gemini.md (the table has no gemini column) are held the same way."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from returns.result import Failure

from metaharness.pure.options import RunOptions, check_kind_carriage

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
METAHARNESS = Path(sys.executable).with_name("metaharness")
KINDS = ("claude", "codex", "b10x")
SAMPLE = {
    "--effort": "high", "--max-turns": "1", "--credentials": "none", "--api-key-secret": "k", "--model-wire":
    "anthropic-messages", "--subscription-token-file": "t", "--subscription-token-env": "T",
    "--subscription-token-pointer": "/t", "--tool-surface": "owned", "--allow-program": "ls", "--catalogue": "c.yaml",
    "--plugin": "o/r@p@1", "--hooks": "h", "--driver": "d", "--toolchain": "t", "--prices": "p",
    "--write-scope": "**=allowed", "--scope-announce": "silent", "--substrate": "s", "--cgroup-root": "c",
}  # fmt: skip
FLAGS = ("--substrate-embedded",)


def run_table() -> list[list[str]]:
    section = DOC.read_text(encoding="utf-8").split("## `run`", 1)[1].split("\n## ", 1)[0]
    table = section.split("| option |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("|")][1:]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def option_of(cell: str) -> str | None:
    """``-p, --prompt TEXT`` → ``--prompt``; ``KIND`` and ``-- AUDITOR_ARGS…`` → ``None``."""
    return next((word.rstrip(",") for word in cell.strip("`").split() if word.startswith("--") and len(word) > 2), None)


def refused_cells() -> list[tuple[str, str, str]]:
    """(kind, option, value) for every cell the table says is refused ``-not-carried``."""
    cells: list[tuple[str, str, str]] = []
    for row in run_table():
        option = option_of(row[0])
        if option is None:
            continue
        for kind, cell in zip(KINDS, row[3:6], strict=True):
            if cell == "✗":
                cells.append((kind, option, SAMPLE.get(option, "")))
            elif match := re.fullmatch(r"not `([^`]+)`", cell):
                cells.append((kind, option, match.group(1)))
            elif match := re.fullmatch(r"`([^`]+)` only", cell):
                cells.append((kind, option, {"native": "owned", "owned": "native"}[match.group(1)]))
    return cells


def carried_cells() -> list[tuple[str, str]]:
    """(kind, option) for every cell that begins ✓."""
    return [
        (kind, option)
        for row in run_table()
        if (option := option_of(row[0])) is not None
        for kind, cell in zip(KINDS, row[3:6], strict=True)
        if cell.startswith("✓")
    ]


def test_the_table_has_refused_cells_on_every_kind() -> None:
    assert {kind for kind, _, _ in refused_cells()} == set(KINDS)


@pytest.mark.parametrize(("kind", "option", "value"), refused_cells())
def test_every_refused_cell_is_the_program_s_not_carried_refusal(kind: str, option: str, value: str) -> None:
    words = [option] if option in FLAGS else [option, value]
    done = subprocess.run(
        [str(METAHARNESS), "run", kind, *words], capture_output=True, timeout=60, check=False,
        env={"HOME": "/nonexistent", "PATH": os.environ["PATH"]},
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith(f"metaharness: {option[2:]}-not-carried: "), done.stderr


@pytest.mark.parametrize(("kind", "option"), carried_cells())
def test_every_carried_cell_passes_kind_carriage(kind: str, option: str) -> None:
    given = RunOptions(kind=kind, given=frozenset({option[2:]}))  # type: ignore[arg-type]
    refused = check_kind_carriage(given)
    assert not (isinstance(refused, Failure) and refused.failure().code.endswith("-not-carried"))


def seventeen_files(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    for index in range(17):
        (tree / f"f{index:02}.md").write_text("x\n")
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    subprocess.run(["git", "-C", str(tree), "add", "."], check=True)
    return tree


@pytest.mark.parametrize("kind", KINDS)
def test_credentials_come_before_the_context_files_on_every_kind(tmp_path: Path, kind: str) -> None:
    """Stage 5 before stage 6 (docs/hermetic.md#refusal-order): ``api-key`` without its key beside seventeen
    ``--context`` files is ``api-key-missing``; under ``none`` it is ``context-too-many``."""
    tree = seventeen_files(tmp_path)
    contexts = [word for index in range(17) for word in ("--context", f"f{index:02}.md")]
    base = ["--decisions", "observe", "--model-endpoint", "http://127.0.0.1:9/v1"] if kind == "b10x" else []
    env = {"HOME": str(tmp_path), "PATH": os.environ["PATH"]}
    for credentials, code in (("api-key", "api-key-missing"), ("none", "context-too-many")):
        done = subprocess.run(
            [str(METAHARNESS), "run", kind, "-p", "x", *base, "--credentials", credentials, "--cwd", str(tree),
             *contexts],
            capture_output=True, timeout=60, check=False, env=env,
        )  # fmt: skip
        assert done.returncode == 2 and done.stdout == b""
        assert done.stderr.decode().startswith(f"metaharness: {code}: "), (credentials, done.stderr)


GEMINI_DOC = DOC.parent / "adapters" / "gemini.md"


def gemini_lists() -> tuple[list[str], list[str]]:
    """The options docs/adapters/gemini.md says are carried, and those it says are refused by name (its
    "the loop's options" are the run table's rows that reach b10x only)."""
    opening = GEMINI_DOC.read_text(encoding="utf-8").split("What is carried:", 1)[1].split("\n\n", 1)[0]
    carried, refused = opening.split("Refused by name", 1)
    options = [option_of(word) for word in re.findall(r"`([^`]+)`", refused)]
    loop_only = [option for row in run_table() if (option := option_of(row[0])) and row[3:5] == ["✗", "✗"]]
    named = [o for o in re.findall(r"`(--[a-z-]+)", carried) if o not in ("--credentials", "--model-endpoint")]
    return named, [o for o in options if o is not None and o != "--credentials"] + loop_only


def test_gemini_s_lists_name_every_option_of_the_table_once() -> None:
    """docs/cli.md#run's table has no gemini column: gemini.md's two lists stand for it, so between them they name
    every option of the table (the prompt, the credential mode and the endpoint are worded apart) and none twice."""
    carried, refused = gemini_lists()
    table = {option for row in run_table() if (option := option_of(row[0])) is not None}
    assert set(carried).isdisjoint(refused)
    assert set(carried) | set(refused) | {"--prompt", "--credentials", "--model-endpoint"} == table


@pytest.mark.parametrize("option", gemini_lists()[1])
def test_every_option_gemini_md_refuses_is_refused_not_carried(option: str) -> None:
    words = [option] if option in FLAGS else [option, SAMPLE.get(option, "x")]
    done = subprocess.run(
        [str(METAHARNESS), "run", "gemini", "-p", "x", "--credentials", "none", *words], capture_output=True,
        timeout=60, check=False, env={"HOME": "/nonexistent", "PATH": os.environ["PATH"]},
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith(f"metaharness: {option[2:]}-not-carried: "), done.stderr


@pytest.mark.parametrize("option", gemini_lists()[0])
def test_every_option_gemini_md_carries_passes_kind_carriage(option: str) -> None:
    given = RunOptions(kind="gemini", credentials="none", given=frozenset({option[2:]}))
    refused = check_kind_carriage(given)
    assert not (isinstance(refused, Failure) and refused.failure().code.endswith("-not-carried"))
