"""The ``proc:`` subjects of a command: every program it would run, and ``proc:sh`` where an option runs
code or writes where the subject rule does not reach (docs/decisions.md#program-subjects).

``command_subjects(text)`` reads a shell command line (claude's ``Bash``, codex's shell calls): a line
holding shell syntax (``; & | < > ( )``, a backquote, ``$(``, ``${``, a newline), a leading
``NAME=`` or unbalanced quotes is ``proc:sh``; else its words, split as a POSIX shell splits them,
are an argv. ``argv_subjects(argv)`` reads an argv (the loop's ``run``): ``proc:<argv[0]>`` as spelled,
then what the program's row of ``PROGRAMS`` adds — a wrapper's inner program (``env``, ``nice``,
``timeout``, ``xargs``, ``find -exec``, …, each read again), or ``proc:sh`` for an option that runs
code or writes elsewhere (``git -c``, ``sh -c``, ``sed -i``, ``tar --to-command``, …).
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

SHELL = "proc:sh"
MAX_DEPTH = 8
"""Wrappers nested deeper than this are ``proc:sh``."""
_SYNTAX = re.compile(r"[;&|<>()`\n]|\$\{")
"""Shell syntax: ``; & | < > ( )``, a backquote, ``$(``, ``${``, a newline."""
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PLAIN_WORDS = re.compile(r"[^\s'\"\\]+(?: +[^\s'\"\\]+)*")
"""Words with no quote, backslash or whitespace, between runs of spaces: POSIX splitting (``shlex``) reads them
as they stand, so such a line is split at its spaces without the lexer."""


def command_subjects(command: str) -> tuple[str, ...]:
    """The subjects of a shell command line: ``proc:sh`` for any shell syntax (a line break included, even alone);
    none for one that is blank."""
    stripped = command.strip()
    if _SYNTAX.search(command) or _ASSIGNMENT.match(stripped):
        return (SHELL,)
    if not stripped:
        return ()
    if _PLAIN_WORDS.fullmatch(stripped):
        return argv_subjects(stripped.split())
    try:
        words = shlex.split(stripped, posix=True)
    except ValueError:
        return (SHELL,)
    return argv_subjects(words) if words else (SHELL,)


def argv_subjects(argv: Sequence[str]) -> tuple[str, ...]:
    """The subjects of an argv: its program as spelled, then what the program's row adds, in order,
    duplicates dropped."""
    return tuple(dict.fromkeys(_walk(tuple(argv), 0)))


def _walk(argv: tuple[str, ...], depth: int) -> list[str]:
    if not argv:
        return []
    if depth > MAX_DEPTH:
        return [SHELL]
    row = PROGRAMS.get(posixpath.basename(argv[0]))
    found = [f"proc:{argv[0]}"]
    if row is None:
        return found
    for inner in row(argv[1:]):
        found += [SHELL] if inner is None else _walk(inner, depth + 1)
    return found


Reading = list[tuple[str, ...] | None]
"""What a row finds in a program's arguments: inner argvs to read again, ``None`` for ``proc:sh``."""


def _options(args: tuple[str, ...], valued: frozenset[str], code: frozenset[str] = frozenset()) -> tuple[int, bool]:
    """Skip leading options (``valued`` take the next word unless attached as ``--x=v``/``-xv``):
    the index of the first operand, and whether an option in ``code`` was given."""
    index, ran = 0, False
    while index < len(args):
        word = args[index]
        if word == "--":
            return index + 1, ran
        if not word.startswith("-") or word == "-":
            return index, ran
        name = word.partition("=")[0] if word.startswith("--") else word[:2]
        ran = ran or name in code
        attached = "=" in word if word.startswith("--") else len(word) > 2
        index += 2 if name in valued and not attached else 1
    return index, ran


def _wrapper(valued: frozenset[str], leading: int = 0, code: frozenset[str] = frozenset()) -> Callable[[tuple[str, ...]], Reading]:
    """A program that runs the argv after its options (and ``leading`` operands such as a duration)."""

    def read(args: tuple[str, ...]) -> Reading:
        start, ran = _options(args, valued, code)
        inner = args[start + leading :]
        return [*([None] if ran else []), *([inner] if inner else [])]

    return read


def _env(args: tuple[str, ...]) -> Reading:
    """``env``: ``-S`` splits a string into a command, and a ``NAME=VALUE`` can carry code into the
    program it runs (``LD_PRELOAD``, ``GIT_SSH_COMMAND``), so either is ``proc:sh``."""
    start, ran = _options(args, frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
                          frozenset({"-S", "--split-string", "-C", "--chdir"}))  # fmt: skip
    rest = args[start:]
    assigned = False
    while rest and _ASSIGNMENT.match(rest[0]):
        rest, assigned = rest[1:], True
    return [*([None] if ran or assigned else []), *([rest] if rest else [])]


def _xargs(args: tuple[str, ...]) -> Reading:
    """``xargs``: the command after its options, ``echo`` when none."""
    valued = frozenset({"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "--max-lines", "-n", "--max-args",
                        "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"})  # fmt: skip
    start, _ = _options(args, valued)
    return [args[start:] or ("echo",)]


_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})


def _find(args: tuple[str, ...]) -> Reading:
    """``find``: each ``-exec``/``-execdir``/``-ok``/``-okdir`` command up to ``;`` or ``+``; an action
    that deletes or writes a file is ``proc:sh``."""
    found: Reading = []
    index = 0
    while index < len(args):
        word = args[index]
        if word in _FIND_RUNS:
            end = next((i for i in range(index + 1, len(args)) if args[i] in (";", "+")), len(args))
            found.append(args[index + 1 : end] or None)
            index = end
        elif word in _FIND_WRITES:
            found.append(None)
        index += 1
    return found


def _shell(args: tuple[str, ...]) -> Reading:
    """A shell: ``-c`` (alone or among its short options) runs a command string."""
    for word in args:
        if not word.startswith("-") or word == "--":
            return []
        if not word.startswith("--") and "c" in word[1:]:
            return [None]
    return []


GIT_GLOBAL_VALUED = frozenset({"-c", "-C", "--config-env", "--exec-path", "--git-dir", "--work-tree", "--namespace",
                               "--super-prefix", "--list-cmds", "--attr-source"})  # fmt: skip
GIT_GLOBAL_CODE = frozenset({"-c", "-C", "--config-env", "--exec-path", "--git-dir", "--work-tree", "--super-prefix",
                             "--attr-source"})  # fmt: skip
"""git's options before the subcommand that set configuration (which can name programs: ``core.fsmonitor``,
``core.sshCommand``, ``alias.*``, ``diff.*.textconv``), point git at another program or another repository
or work tree."""
GIT_SUBCOMMANDS = frozenset({
    "add", "am", "annotate", "apply", "blame", "branch", "bundle", "cat-file", "check-attr", "check-ignore",
    "checkout", "cherry", "cherry-pick", "clean", "clone", "commit", "count-objects", "describe", "diff",
    "diff-files", "diff-index", "diff-tree", "fetch", "for-each-ref", "format-patch", "fsck", "gc", "grep", "help",
    "init", "log", "ls-files", "ls-remote", "ls-tree", "merge", "merge-base", "mv", "name-rev", "notes", "pull",
    "push", "range-diff", "rebase", "reflog", "remote", "reset", "restore", "rev-list", "rev-parse", "revert", "rm",
    "shortlog", "show", "show-ref", "sparse-checkout", "stash", "status", "switch", "tag", "version", "whatchanged",
    "worktree",
})  # fmt: skip
"""git's own subcommands that run no program of the caller's choosing; any other word (an alias, a
``git-<name>`` on the PATH, ``config``, ``difftool``, ``mergetool``, ``filter-branch``, ``bisect``,
``submodule``) is ``proc:sh``."""
GIT_CODE_OPTIONS: Mapping[str, frozenset[str]] = MappingProxyType({
    "archive": frozenset({"-o", "--output", "--exec", "--remote"}),
    "clone": frozenset({"-u", "--upload-pack", "--template", "--separate-git-dir", "--config", "-c"}),
    "fetch": frozenset({"--upload-pack"}),
    "pull": frozenset({"--upload-pack"}),
    "ls-remote": frozenset({"--upload-pack"}),
    "push": frozenset({"--receive-pack", "--exec"}),
    "format-patch": frozenset({"-o", "--output-directory"}),
    "rebase": frozenset({"-x", "--exec"}),
    "grep": frozenset({"-O", "--open-files-in-pager"}),
    "init": frozenset({"--template", "--separate-git-dir"}),
    "diff": frozenset({"--ext-diff"}),
    "log": frozenset({"--ext-diff"}),
    "show": frozenset({"--ext-diff"}),
})  # fmt: skip
"""Subcommand options that write where the subject rule does not reach or run a program of the
caller's choosing, beside ``--output`` on every subcommand (``log --output``): ``archive -o``/``--exec``,
``clone -u``/``--upload-pack``/``--template``/``--separate-git-dir``/``--config``, ``fetch``/``pull``/``ls-remote
--upload-pack``, ``push --receive-pack``/``--exec``, ``format-patch -o``, ``rebase -x``/``--exec``,
``grep -O``, ``init --template``/``--separate-git-dir``, ``diff``/``log``/``show --ext-diff``."""


def _git(args: tuple[str, ...]) -> Reading:
    """git: a global option in ``GIT_GLOBAL_CODE``, a subcommand outside ``GIT_SUBCOMMANDS`` (an alias
    among them), ``--output`` or one of the subcommand's ``GIT_CODE_OPTIONS`` is ``proc:sh``."""
    start, ran = _options(args, GIT_GLOBAL_VALUED, GIT_GLOBAL_CODE)
    if ran:
        return [None]
    rest = args[start:]
    if not rest:
        return []
    if rest[0] not in GIT_SUBCOMMANDS:
        return [None]
    code = GIT_CODE_OPTIONS.get(rest[0], frozenset()) | {"--output"}
    for word in rest[1:]:
        if word == "--":
            break
        name = word.partition("=")[0] if word.startswith("--") else word[:2]
        if name in code:
            return [None]
    return []


def _any_option(options: frozenset[str]) -> Callable[[tuple[str, ...]], Reading]:
    """A program where any of ``options`` (``--x``, ``--x=v``, or a short ``-x`` among bundled letters
    when ``-x`` is listed; any letter of a bundle counts, so a value attached may be read as options,
    which only ever adds ``proc:sh``) is ``proc:sh``."""
    shorts = {option[1] for option in options if len(option) == 2}

    def read(args: tuple[str, ...]) -> Reading:
        for word in args:
            if word == "--":
                return []
            if word.startswith("--") and word.partition("=")[0] in options:
                return [None]
            if word.startswith("-") and not word.startswith("--") and shorts & set(word[1:]):
                return [None]
        return []

    return read


def _awk(args: tuple[str, ...]) -> Reading:
    """awk: a program file (``-f``), or program text that pipes, redirects or calls ``system``."""
    start, ran = _options(args, frozenset({"-F", "-v", "-f", "--file", "-i", "--include", "-E", "--exec"}),
                          frozenset({"-f", "--file", "-i", "--include", "-E", "--exec"}))  # fmt: skip
    program = args[start] if start < len(args) else ""
    return [None] if ran or any(mark in program for mark in ("system", "|", ">", "getline")) else []


_SED_RISKY = re.compile(r"(^|[;}\s\d$/])[ewWrR](\s|$|;|})")


def _sed(args: tuple[str, ...]) -> Reading:
    """sed: in-place editing (``-i``, also inside a bundle such as ``-ni``), a script file, and a
    script's ``e``/``w``/``W``/``r``/``R`` commands or ``s///e``/``s///w`` flags."""
    start, ran = _options(args, frozenset({"-e", "--expression", "-f", "--file", "-l"}),
                          frozenset({"-i", "--in-place", "-f", "--file"}))  # fmt: skip
    bundled = any(w.startswith("-") and not w.startswith("--") and "i" in w[1:].split("e")[0].split("f")[0]
                  for w in args[:start])  # fmt: skip
    scripts = [args[i + 1] for i in range(len(args) - 1) if args[i] in ("-e", "--expression")]
    if not scripts and start < len(args):
        scripts = [args[start]]
    return [None] if ran or bundled or any(_SED_RISKY.search(script) for script in scripts) else []


_WRAPPERS: Mapping[str, Callable[[tuple[str, ...]], Reading]] = {
    "nice": _wrapper(frozenset({"-n", "--adjustment"})),
    "nohup": _wrapper(frozenset()),
    "setsid": _wrapper(frozenset()),
    "stdbuf": _wrapper(frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "time": _wrapper(frozenset({"-f", "--format", "-o", "--output"}), code=frozenset({"-o", "--output"})),
    "timeout": _wrapper(frozenset({"-s", "--signal", "-k", "--kill-after"}), leading=1),
    "ionice": _wrapper(frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"})),
    "command": _wrapper(frozenset()),
    "exec": _wrapper(frozenset({"-a"})),
    "builtin": _wrapper(frozenset()),
    "busybox": _wrapper(frozenset()),
    "chrt": _wrapper(frozenset(), leading=1),
    "taskset": _wrapper(frozenset(), leading=1),
    "flock": _wrapper(frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), leading=1,
                      code=frozenset({"-c", "--command"})),
    "watch": _wrapper(frozenset({"-n", "--interval", "-d"})),
    "strace": _wrapper(frozenset({"-e", "-o", "-p", "-s", "-u", "-E"}), code=frozenset({"-o", "-p", "-u", "-E"})),
    "sudo": lambda args: [None],
    "doas": lambda args: [None],
    "su": lambda args: [None],
    "unshare": lambda args: [None],
    "nsenter": lambda args: [None],
    "chroot": lambda args: [None],
}
_SHELLS = {name: _shell for name in ("sh", "bash", "dash", "zsh", "ksh", "mksh", "ash")}

PROGRAMS: Mapping[str, Callable[[tuple[str, ...]], Reading]] = MappingProxyType({
    **_WRAPPERS,
    **_SHELLS,
    "env": _env,
    "xargs": _xargs,
    "find": _find,
    "git": _git,
    "awk": _awk, "gawk": _awk, "mawk": _awk, "nawk": _awk,
    "sed": _sed,
    "tar": _any_option(frozenset({"--to-command", "--use-compress-program", "-I", "--checkpoint-action",
                                  "--info-script", "--new-volume-script", "-F", "--rsh-command", "--rmt-command"})),
    "rsync": _any_option(frozenset({"-e", "--rsh", "--rsync-path", "--write-batch", "--only-write-batch"})),
    "ssh": _any_option(frozenset({"-o", "-F", "-J", "-S", "-E", "-y"})),
    "scp": _any_option(frozenset({"-o", "-F", "-J", "-S"})),
    "curl": _any_option(frozenset({"-o", "--output", "-O", "--remote-name", "-K", "--config", "-D", "--dump-header",
                                   "-c", "--cookie-jar", "--trace", "--trace-ascii", "--libcurl", "--output-dir"})),
    "wget": _any_option(frozenset({"-O", "--output-document", "-o", "--output-file", "-P", "--directory-prefix",
                                   "-a", "--append-output", "-e", "--execute", "--config"})),
})  # fmt: skip
"""The known programs' rows (docs/decisions.md#program-subjects): what each adds to ``proc:<program>``."""
