"""A command's subjects name every program it would run, and an option that runs code or writes
elsewhere adds ``proc:sh``, however the program is wrapped (docs/decisions.md#program-subjects)."""

from __future__ import annotations

import shlex

from hypothesis import assume, given, reject, settings
from hypothesis import strategies as st

from metaharness.pure.admission import admit_call
from metaharness.pure.events import Allow
from metaharness.pure.frames import Operation, seal_frame
from metaharness.pure.program_subjects import (
    GIT_GLOBAL_CODE,
    GIT_SUBCOMMANDS,
    SHELL,
    argv_subjects,
    command_subjects,
)

words = st.from_regex(r"[a-z][a-z0-9._/-]{0,8}", fullmatch=True)
programs = st.sampled_from(["touch", "rm", "git", "python3", "cat", "make", "ls"])
argvs = st.tuples(programs, st.lists(words, max_size=4)).map(lambda pair: (pair[0], *pair[1]))
wrappers = st.sampled_from([("env",), ("nice", "-n", "5"), ("timeout", "5"), ("timeout", "-s", "KILL", "3"),
                            ("xargs",), ("stdbuf", "-o0"), ("nohup",), ("setsid",), ("command",), ("busybox",),
                            ("find", ".", "-exec")])  # fmt: skip
FRAME = seal_frame({
    "format": "metaharness.frame/1", "workflow": {"id": "w", "version": "1"}, "node": {"id": "n"},
    "step": {"workflow": "w", "state": "s", "index": 0, "attempt": 1}, "prior": [], "obligations": [],
    "reaching": [], "next": [], "handoff": {"handoff": "none"}, "operations": [{"op": "shell"}],
    "subjects": [{"subject": "proc:git", "operations": [{"op": "shell"}]}, {"subject": "**", "operations": []}],
}).unwrap()  # fmt: skip


def admitted(subjects: tuple[str, ...]) -> bool:
    return isinstance(admit_call(FRAME, "Bash", (Operation("shell"),), subjects).decision, Allow)


@settings(max_examples=300)
@given(st.lists(wrappers, min_size=1, max_size=3), argvs)
def test_a_wrapped_program_keeps_every_subject_of_what_it_wraps(layers: list[tuple[str, ...]], argv: tuple[str, ...]) -> None:
    inner = argv_subjects(argv)
    wrapped = argv
    for layer in layers:
        wrapped = (*layer, *wrapped, *((";",) if layer[0] == "find" else ()))
    subjects = argv_subjects(wrapped)
    assert set(inner) <= set(subjects)
    assert {f"proc:{layer[0]}" for layer in layers} <= set(subjects)
    assert not admitted(subjects)


@settings(max_examples=300)
@given(st.sampled_from(sorted(GIT_GLOBAL_CODE)), words, st.sampled_from(sorted(GIT_SUBCOMMANDS)), st.lists(words, max_size=3))
def test_a_git_option_that_reconfigures_git_is_sh_under_any_subcommand(
    option: str, value: str, subcommand: str, rest: list[str]
) -> None:
    subjects = argv_subjects(("git", option, value, subcommand, *rest))
    assert SHELL in subjects and not admitted(subjects)


@settings(max_examples=300)
@given(words.filter(lambda word: word not in GIT_SUBCOMMANDS), st.lists(words, max_size=3))
def test_a_git_word_that_is_no_builtin_subcommand_may_be_an_alias_and_is_sh(word: str, rest: list[str]) -> None:
    assert SHELL in argv_subjects(("git", word, *rest))


@settings(max_examples=300)
@given(st.sampled_from(sorted(GIT_SUBCOMMANDS)), st.lists(words, max_size=3))
def test_plain_git_subcommands_stay_proc_git_and_the_command_line_reads_as_its_argv(
    subcommand: str, rest: list[str]
) -> None:
    argv = ("git", subcommand, *rest)
    subjects = argv_subjects(argv)
    assert subjects[0] == "proc:git" and (subjects == ("proc:git",)) == admitted(subjects)
    assert command_subjects(shlex.join(argv)) == subjects
    assert SHELL in argv_subjects((*argv, "--output=/elsewhere"))


@settings(max_examples=500)
@given(st.lists(st.sampled_from([*"ab-=*~#é", " ", "  ", "\t", "\r", "\x0b", "\x1c", "\x85", "\xa0", "\u2003",
                                  "'", '"', "\\", "git", "env"]), max_size=12).map("".join))  # fmt: skip
def test_a_command_line_is_split_as_a_posix_shell_splits_it(command: str) -> None:
    stripped = command.strip()
    assume(stripped and not any(mark in command for mark in ";&|<>()`$\n") and "=" not in stripped.split(" ")[0])
    try:
        words = shlex.split(stripped, posix=True)
    except ValueError:
        reject()
    assert command_subjects(command) == (argv_subjects(words) if words else (SHELL,))
