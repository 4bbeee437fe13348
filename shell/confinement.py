"""Confinement in the shell: the facts a view is planned over, the route proxy on
the view's socket and the confined spawn's namespace check (docs/confinement.md).

A run calls :func:`prepare` in its credential stage (the refusals ``confine-unavailable``,
``confine-route-unavailable`` and ``confine-read-exposes``, before any scratch file), then, once the
scratch tree is written, :func:`confine` for the :class:`ConfinedSpawn` its live loop starts. The
decisions are ``metaharness.pure.confinement``'s.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Sequence

import msgspec
from returns.result import Failure, Result, Success

import metaharness
import metaharness.pure
import metaharness.shell
import metaharness.vectors
from metaharness.pure.adapters import adapter_of
from metaharness.pure.bounds import CREDENTIAL_FILE_LIMIT
from metaharness.pure.budgets import NAMESPACE_SAMPLE_S, NAMESPACE_WAIT_S
from metaharness.pure.confinement import (
    RESOLVER,
    RESOLVER_TEXT,
    SYSTEM_ROOTS,
    TOOL_ENTRY,
    TOOL_PATH,
    Confinement,
    ConfinementFacts,
    ModelRoute,
    SystemEntry,
    ToolGrant,
    check_confine_reads,
    covered_files,
    hidden_trees,
    install_root,
    model_route,
    named_paths,
    plan_confinement,
    render_bwrap,
    render_tool_entry,
    shebang_interpreter,
    tools_entered,
    view_lines,
)
from metaharness.pure.environment import operator_login_file, path_directories, path_floor
from metaharness.pure.hermetic import Verdict, VerdictFacts
from metaharness.pure.hook_channel import shell_quote
from metaharness.pure.kind import KINDS, Kind
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import read_regular
from metaharness.shell.substrate import substrate

SIGNAL_SHIELD = ("/bin/sh", "-c", 'trap "" INT TERM HUP; exec "$0" "$@"')
"""bwrap's own process ignores the run loop's group signals (it would die and take the view with it);
the view's init receives them and forwards them to the harness."""


class Prepared(msgspec.Struct, frozen=True, kw_only=True):
    """What stage 5 settled for a confined run: the substrate, the route, the declared reads, the
    trees the view hides and the files metaharness keeps for the operator while the run lasts
    (``--events`` FILE), bound read-only in the view when a writable directory holds them."""

    kind: Kind
    bwrap: str
    bwrap_version: str
    route: ModelRoute | None
    reads: tuple[str, ...]
    home: str | None
    hidden: tuple[str, ...]
    kept: tuple[str, ...] = ()


def _login_is_api_key(kind: Kind, caller_env: dict[str, str]) -> bool:
    """Whether the caller's operator-login file for ``kind`` holds an API key (a file that is no
    regular file, or is past ``CREDENTIAL_FILE_LIMIT``, holds none)."""
    loopback = adapter_of(kind).loopback
    path = operator_login_file(kind, caller_env)
    if loopback is None or path is None:
        return False
    try:
        data = read_regular(path, CREDENTIAL_FILE_LIMIT)
    except OSError:
        return False
    return isinstance(loopback.custody_token(data), Success)


def custody_files(caller_env: dict[str, str]) -> tuple[str, ...]:
    """Every custody file a run could name: the caller's claude and codex login files."""
    return tuple(path for kind in KINDS if (path := operator_login_file(kind, caller_env)) is not None)


def prepare(options: RunOptions, caller_env: dict[str, str], custody: str | None) -> Prepared | Refusal | None:
    """Stage 5 for ``--confine``: ``None`` when off, else the settled facts or the first refusal."""
    if options.confine == "off":
        return None
    found = substrate()
    if isinstance(found, Failure):
        refused: Refusal = found.failure()
        return refused
    bwrap, version = found.unwrap()
    kind: Kind = options.kind
    route = model_route(
        kind, options.credentials, options.model_endpoint, custody, _login_is_api_key(kind, caller_env),
        options.model_wire, options.model,
    )  # fmt: skip
    if isinstance(route, Failure):
        unroutable: Refusal = route.failure()
        return unroutable
    home = caller_env.get("HOME") or None
    hidden = hidden_trees(custody_files(caller_env))
    reads = check_confine_reads(options.confine_read, home, hidden)
    if isinstance(reads, Failure):
        exposing: Refusal = reads.failure()
        return exposing
    return Prepared(kind=kind, bwrap=bwrap, bwrap_version=version, route=route.unwrap(), reads=reads.unwrap(),
                    home=home, hidden=hidden, kept=(os.path.realpath(options.events),) if options.events else ())  # fmt: skip


def system_entries() -> tuple[SystemEntry, ...]:
    """The system directories that exist, a symbolic link with its target."""
    entries: list[SystemEntry] = []
    for path in SYSTEM_ROOTS:
        if os.path.islink(path):
            entries.append(SystemEntry(path, os.readlink(path)))
        elif os.path.isdir(path):
            entries.append(SystemEntry(path))
    return tuple(entries)


def _venv_homes(path: str) -> dict[str, str | None]:
    """Each ancestor of ``path`` holding ``pyvenv.cfg``, with its ``home`` key."""
    found: dict[str, str | None] = {}
    directory = os.path.dirname(path)
    while directory != "/":
        config = os.path.join(directory, "pyvenv.cfg")
        if os.path.isfile(config):
            with open(config, encoding="utf-8", errors="replace") as handle:
                keys = dict(line.partition("=")[::2] for line in handle if "=" in line)
            found[directory] = next((v.strip() for k, v in keys.items() if k.strip() == "home"), None)
        directory = os.path.dirname(directory)
    return found


def _link_directories(path: str) -> tuple[str, ...]:
    """The directory of each symbolic link on the way from ``path`` to its real file (at most 40 hops),
    so the path the record names resolves inside the view."""
    directories: list[str] = []
    while os.path.islink(path) and len(directories) < 40:
        directory = os.path.dirname(path)
        directories.append(os.path.realpath(directory))
        path = os.path.join(directory, os.readlink(path))
    return tuple(directories)


def _roots(path: str) -> tuple[str, ...]:
    """The install roots of ``path`` as named and of its real path, and the directories of the links
    between them."""
    real = os.path.realpath(path)
    named = install_root(path, _venv_homes(path))
    return (*named, *install_root(real, _venv_homes(real)), *_link_directories(path))


def _first_line(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.readline(4096)
    except OSError:
        return b""


def closure(program: str, child_path: str) -> tuple[str, ...]:
    """The program's install roots and its script interpreter's, the PATH entries holding its link,
    and metaharness's own roots (the bridge runs inside)."""
    roots = list(_roots(program))
    interpreter = shebang_interpreter(_first_line(os.path.realpath(program)))
    if interpreter[:1] == ("env",):
        named = next(
            (os.path.join(d, interpreter[1]) for d in path_directories(child_path)
             if os.access(os.path.join(d, interpreter[1]), os.X_OK)),
            None,
        )  # fmt: skip
        interpreter = (named,) if named is not None else ()
    for named in interpreter:
        roots += _roots(named)
    directory = os.path.dirname(program)
    if directory in path_directories(child_path):
        roots.append(directory)
    return (*roots, *own_roots())


def program_reads(argv: Sequence[str], child_path: str) -> tuple[str, ...]:
    """What the view must hold for ``argv`` started inside it (a b10x hook): its program's closure (a
    bare name looked up on ``child_path``; a relative one lies in the child's own directory) and the
    existing files its later words name by absolute path. ``shutil`` (with its archive modules) is loaded here, not
    with stage 5's ``prepare``."""
    import shutil

    named = tuple(path for path in named_paths(argv) if os.path.exists(path))
    program = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=child_path)
    if program is None or not program.startswith("/") or not os.path.exists(program):
        return named
    return (*closure(program, child_path), *named)


def confine_init() -> tuple[str, ...]:
    """The argv that starts the in-view init and bridge (``metaharness.shell.confine_init``) under the
    Python running metaharness, whose roots the view binds."""
    return (sys.executable, "-m", "metaharness.shell.confine_init")


@functools.cache
def own_roots() -> tuple[str, ...]:
    """Where this metaharness runs from: its interpreter's roots and its packages' directories (the
    ``metaharness`` package itself too: under an editable install it is ``src/metaharness``, whose links name
    the top-level halves)."""
    packages = (
        *metaharness.__path__, *metaharness.pure.__path__, *metaharness.shell.__path__, *metaharness.vectors.__path__
    )
    return (*_roots(sys.executable), *(os.path.realpath(path) for path in packages))


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (none when it is gone)."""
    children: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", "rb") as listing:
                children += [int(word) for word in listing.read().split()]
    except (OSError, ValueError):
        pass
    return children


def _uncovered(harness: int, covered: Sequence[str]) -> tuple[str, ...]:
    """The covered files that are no character device in the harness's view, looked up from outside through
    ``/proc/<harness>/root`` (the path lies in the view's read-only closure, which nothing in it can change)."""
    found = []
    for path in covered:
        try:
            if not stat.S_ISCHR(os.lstat(f"/proc/{harness}/root{path}").st_mode):
                found.append(path)
        except OSError:
            found.append(path)
    return tuple(found)


def _harness(sandbox: int) -> int | None:
    """The harness's pid: the first child of the view's init, below bwrap's own pid 1 (``None`` when the
    view ended first)."""
    deadline = time.monotonic() + NAMESPACE_WAIT_S
    while time.monotonic() < deadline and os.path.exists(f"/proc/{sandbox}"):
        harness = next((child for init in _children(sandbox) for child in _children(init)), None)
        if harness is not None:
            return harness
        time.sleep(NAMESPACE_SAMPLE_S)
    return None


def _working_directory(pid: int | None) -> tuple[str, int, int] | None:
    """``/proc/<pid>/cwd`` read and stat'ed from outside the view (the kernel's, not the child's word): its path,
    device and inode."""
    if pid is None:
        return None
    try:
        status, path = os.stat(f"/proc/{pid}/cwd"), os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    return path, status.st_dev, status.st_ino


class ConfinedSpawn:
    """A planned view, ready to spawn: :attr:`argv` for the live loop's ``Popen`` with :attr:`pass_fds`,
    :meth:`spawned` right after it, :meth:`namespaces` for rows H12 and H13 and :meth:`tools` for H14."""

    def __init__(self, confinement: Confinement) -> None:
        self.confinement = confinement
        self._info_read, self._info_write = os.pipe()
        self.argv: list[str] = [*SIGNAL_SHIELD, *render_bwrap(confinement, self._info_write)]
        self.pass_fds = (self._info_write,)
        self._verdict: Verdict = "unk"
        self._tools: Verdict = "unk"
        self._checked = threading.Event()
        self._tools_checked = threading.Event()
        self._cwd: tuple[str, int, int] | None = None

    def spawned(self) -> None:
        """Close the parent's copy of the info pipe and read the sandbox's namespaces once bwrap names
        its pid."""
        os.close(self._info_write)
        threading.Thread(target=self._check, daemon=True).start()

    def _check(self) -> None:
        try:
            with os.fdopen(self._info_read, "rb") as info:
                text = b""
                while b"}" not in text:
                    chunk = info.read1(4096)
                    if not chunk:
                        return
                    text += chunk
                pid = json.loads(text[: text.index(b"}") + 1])["child-pid"]
                shared = any(
                    os.readlink(f"/proc/{pid}/ns/{name}") == os.readlink(f"/proc/self/ns/{name}")
                    for name in ("mnt", "net")
                )
                self._verdict = "gap" if shared else "ok"
        except (OSError, ValueError, KeyError):
            return
        finally:
            self._checked.set()
        try:
            self._cwd = _working_directory(_harness(pid))
            self._check_tools(pid)
        finally:
            self._tools_checked.set()

    def _check_tools(self, sandbox: int) -> None:
        """Row H14's effect check: the harness's environment, read from outside, names the tools'
        layer's entry as the vendor starts every tool through it (``tools_entered``)."""
        layer = self.confinement.tools
        if layer is None or (layer.variable is None and layer.path is None):
            return
        harness = _harness(sandbox)
        deadline = time.monotonic() + NAMESPACE_WAIT_S
        while harness is not None and time.monotonic() < deadline:
            try:
                with open(f"/proc/{harness}/environ", "rb") as environ:
                    held = environ.read()
                if held:
                    self._tools = tools_entered(layer, held, _uncovered(harness, covered_files(self.confinement)))
                    return
                with open(f"/proc/{harness}/stat", "rb") as status:
                    if status.read().rsplit(b")", 1)[-1].split()[:1] in ([b"Z"], [b"X"], []):
                        return  # a harness that already ended reads as an empty environment: not read, so unk
            except OSError:
                return
            time.sleep(NAMESPACE_SAMPLE_S)  # read between its spawn and its exec: sampled again

    @staticmethod
    def signal(pid: int, number: int) -> None:
        """Signal the view's init (it forwards to the harness); ``pid`` is the spawned process."""
        os.killpg(pid, number)

    def tools(self) -> Verdict:
        """``ok`` when the harness was started with the tools' layer's entry in its environment, ``gap``
        when without, ``unk`` when it could not be read (or the kind has no tools' layer)."""
        self._tools_checked.wait(NAMESPACE_WAIT_S)
        return self._tools

    def harness_cwd(self) -> tuple[str, int, int] | None:
        """The harness's working directory (path, device, inode) as the kernel states it, read from outside once
        it started (row H7 by effect, docs/hermetic.md#by-effect); ``None`` when it ended first."""
        self._tools_checked.wait(NAMESPACE_WAIT_S)
        return self._cwd

    def namespaces(self) -> Verdict:
        """``ok`` when the sandbox's mount and network namespaces both differ from metaharness's own,
        ``gap`` when one is shared, ``unk`` when they could not be read before it ended."""
        self._checked.wait(NAMESPACE_WAIT_S)
        return self._verdict


def effect_checked(facts: VerdictFacts, spawn: ConfinedSpawn | None) -> VerdictFacts:
    """``facts`` with the effect checks read after the spawn: rows H12/H13 (the view's namespaces) and H14 (the
    tools' layer); ``unk`` for both when the run was not confined (docs/confinement.md)."""
    return msgspec.structs.replace(facts, namespaces="unk" if spawn is None else spawn.namespaces(),
                                   tools="unk" if spawn is None else spawn.tools())  # fmt: skip


def confine(
    prepared: Prepared,
    *,
    program: str,
    command: Sequence[str],
    child_path: str,
    scratch: str,
    cwd: str,
    writable: Sequence[str],
    governing: Sequence[str],
    sockets: Sequence[str] = (),
    inputs: Sequence[str] = (),
    tool_reads: Sequence[str] = (),
    harness_lines: Sequence[tuple[str, str]] = (),
) -> Result[ConfinedSpawn, Refusal]:
    """Plan the view for ``command`` over the gathered facts; ``sockets`` that exist are bound, and so
    are the declared ``inputs`` the harness reads itself (read-only, beside ``--confine-read``). The
    view's resolver and, for a kind whose tools enter through a program, the tools' layer's entry
    (``tool_reads`` bound in that layer too; ``harness_lines`` the hook's command lines that stay in the
    harness's layer) are written into the fresh scratch root, which nothing else has touched yet."""
    grant = _tool_grant(prepared, scratch, cwd, child_path, tool_reads, harness_lines)
    entry: tuple[str, ...] = ()
    if grant is not None:
        entry = (os.path.join(scratch, TOOL_ENTRY if grant.stands_for is None else TOOL_PATH),)
    facts = ConfinementFacts(
        bwrap=prepared.bwrap,
        bwrap_version=prepared.bwrap_version,
        system=system_entries(),
        home=prepared.home,
        hidden=prepared.hidden,
        closure=closure(program, child_path),
        reads=(*prepared.reads, *inputs),
        writable=tuple(writable),
        governing=(*(path for path in governing if os.path.lexists(path)), *entry, *_kept_in(prepared.kept, writable)),
        init=confine_init(),
        scratch=scratch,
        cwd=cwd,
        command=tuple(command),
        route=prepared.route,
        caller_uid=os.getuid(),
        sockets=tuple(path for path in sockets if os.path.exists(path)),
        resolver=_view_resolver(scratch),
        tools=grant,
        covered=_covered(prepared.kind, program) if grant is not None else (),
    )
    planned = plan_confinement(facts)
    if isinstance(planned, Success) and planned.unwrap().tools is not None:
        layer = planned.unwrap().tools
        assert layer is not None
        _write_entry(scratch, layer.entry, render_tool_entry(layer))
    return planned.map(ConfinedSpawn)


def _tool_grant(
    prepared: Prepared, scratch: str, cwd: str, child_path: str, reads: Sequence[str], lines: Sequence[tuple[str, str]]
) -> ToolGrant | None:
    """What the kind's tools' layer holds: the child's directory and TMPDIR writable (their own TMPDIR, apart
    from the harness's folders, when the kind names one), the declared reads
    and the kind's own read-only folders, its masked sockets; for an entry found on PATH, what it stands
    for, the real program (the substrate's ``bwrap`` unless the kind names one) and the hook lines kept
    where the harness is (``<program> -c '<hook>'``). ``None`` when the kind's tools enter no layer."""
    tools = adapter_of(prepared.kind).confinement.tools
    if tools.mechanism == "unavailable":
        return None
    kept = tuple((shell_quote(os.path.join(scratch, path)), os.path.join(scratch, path)) for path in tools.kept)
    tmp = os.path.join(scratch, "tmp")
    own_tmp = None if tools.own_tmp is None else (os.path.join(scratch, tools.own_tmp), tmp)
    return ToolGrant(
        writable=tuple(path for path in (cwd, *(() if own_tmp else (tmp,))) if os.path.isdir(path)), own_tmp=own_tmp,
        reads=(*reads, *(os.path.join(scratch, path) for path in tools.reads)), harness=(*lines, *kept),
        variable=tools.variable, form=tools.form, masked=tuple(os.path.join(scratch, "tmp", name) for name in tools.masked),
        stands_for=tools.program if tools.mechanism == "path" else None,
        program=tools.runs or prepared.bwrap if tools.mechanism == "path" else None,
        path=child_path if tools.mechanism == "path" else None,
        apart=tuple(os.path.join(tmp, name) for name in tools.apart),
    )  # fmt: skip


def _kept_in(kept: Sequence[str], writable: Sequence[str]) -> tuple[str, ...]:
    """The kept files that lie in a writable directory of the view (a file elsewhere is not in it at all)."""
    roots = [os.path.realpath(path) for path in writable]
    return tuple(path for path in kept if os.path.isfile(path) and any(path.startswith(root.rstrip("/") + "/") for root in roots))


def _covered(kind: Kind, program: str) -> tuple[str, ...]:
    """The files the kind's ``covered`` globs name below the program's ``node_modules`` (its real path's),
    regular files only."""
    roots = {root for root in install_root(os.path.realpath(program), {}) if os.path.basename(root) == "node_modules"}
    found = (path for root in sorted(roots) for pattern in adapter_of(kind).confinement.tools.covered
             for path in sorted(glob.glob(os.path.join(glob.escape(root), pattern))))  # fmt: skip
    return tuple(path for path in found if stat.S_ISREG(os.lstat(path).st_mode))


def _write_entry(scratch: str, entry: str, data: bytes) -> None:
    """The tools' layer's entry in the fresh scratch root (its folders 0700, the file 0500), created and
    never followed. A second view of the same run (codex's catalogue server) finds the one the first
    wrote: no view is started yet and none binds the scratch root itself, so it is reused only when it is
    a regular file holding exactly these bytes."""
    folders = [os.path.dirname(entry)]
    while os.path.dirname(folders[-1]) != scratch:
        folders.append(os.path.dirname(folders[-1]))
    try:
        for folder in reversed(folders):
            os.mkdir(folder, 0o700)
        _write_new(entry, data, 0o500)
    except FileExistsError:
        fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode) or os.read(fd, len(data) + 1) != data:
                raise
        finally:
            os.close(fd)


def _write_new(path: str, data: bytes, mode: int) -> None:
    """A new file in the fresh scratch root: created, never followed or truncated."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _view_resolver(scratch: str) -> str | None:
    """The view's resolver file (``<scratch>/resolv.conf``), bound over ``/etc/resolv.conf`` when that
    is a regular file (a link's target would not exist in the view). A second view of the same run
    (codex's catalogue server) reuses the regular file the first wrote: no view binds the scratch root
    itself, so nothing in one could have put another there."""
    if os.path.islink("/etc/resolv.conf") or not os.path.isfile("/etc/resolv.conf"):
        return None
    path = os.path.join(scratch, RESOLVER)
    try:
        _write_new(path, RESOLVER_TEXT, 0o444)
    except FileExistsError:
        return path if stat.S_ISREG(os.lstat(path).st_mode) else None
    return path


def doctor_lines(kind: Kind, program: str, caller_env: dict[str, str]) -> tuple[str, ...]:
    """The view a run of ``kind`` would build around ``program`` (scratch paths shown as ``<scratch>``),
    or why confinement is unavailable."""
    found = substrate()
    if isinstance(found, Failure):
        return (f"confinement: unavailable: {found.failure().message}",)
    bwrap, version = found.unwrap()
    home = caller_env.get("HOME") or None
    scratch = "<scratch>"
    writable = [f"{scratch}/work", *(f"{scratch}/{name}" for name in adapter_of(kind).confinement.writable)]
    tools = adapter_of(kind).confinement.tools
    grant = None if tools.mechanism == "unavailable" else ToolGrant(
        writable=(f"{scratch}/work", f"{scratch}/tmp"), variable=tools.variable, form=tools.form,
        stands_for=tools.program if tools.mechanism == "path" else None,
        program=tools.runs or bwrap if tools.mechanism == "path" else None,
        path=path_floor(caller_env) if tools.mechanism == "path" else None,
    )  # fmt: skip
    facts = ConfinementFacts(
        bwrap=bwrap, bwrap_version=version, system=system_entries(), home=home,
        hidden=hidden_trees(custody_files(caller_env)), closure=closure(program, path_floor(caller_env)),
        writable=tuple(writable), init=confine_init(), scratch=scratch, cwd=f"{scratch}/work",
        command=(program,), route=ModelRoute("<the model endpoint>", ()), caller_uid=os.getuid(), tools=grant,
        covered=_covered(kind, program) if grant is not None else (),
    )  # fmt: skip
    planned = plan_confinement(facts)
    if isinstance(planned, Failure):
        return (f"confinement: unavailable: {planned.failure().message}",)
    return view_lines(planned.unwrap())
