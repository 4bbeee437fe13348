"""Confinement in the shell: the substrate's trial, the facts a view is planned over, the route proxy on
the view's socket and the confined spawn's namespace check (docs/confinement.md).

A run calls :func:`prepare` in its credential stage (the refusals ``confine-unavailable``,
``confine-route-unavailable`` and ``confine-read-exposes``, before any scratch file), then, once the
scratch tree is written, :func:`confine` for the :class:`ConfinedSpawn` its live loop starts. The
decisions are ``metaharness.pure.confinement``'s.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence

import msgspec
from returns.result import Failure, Result, Success

import metaharness
import metaharness.pure
import metaharness.shell
import metaharness.vectors
from metaharness.pure.adapters import KINDS, Kind, adapter_of, route_dialect
from metaharness.pure.bounds import CREDENTIAL_FILE_LIMIT
from metaharness.pure.confinement import (
    ROUTE_SOCKET,
    SUBSTRATE_PATH,
    SYSTEM_ROOTS,
    Confinement,
    ConfinementFacts,
    ModelRoute,
    SystemEntry,
    check_confine_reads,
    hidden_trees,
    install_root,
    model_route,
    named_paths,
    plan_confinement,
    render_bwrap,
    shebang_interpreter,
    view_lines,
)
from metaharness.pure.environment import operator_login_file, path_directories, path_floor
from metaharness.pure.hermetic import Verdict
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import read_regular
from metaharness.shell.loopback import RouteProxy

TRIAL_S = 5
NAMESPACE_WAIT_S = 60
SIGNAL_SHIELD = ("/bin/sh", "-c", 'trap "" INT TERM HUP; exec "$0" "$@"')
"""bwrap's own process ignores the run loop's group signals (it would die and take the view with it);
the view's init receives them and forwards them to the harness."""


class Prepared(msgspec.Struct, frozen=True, kw_only=True):
    """What stage 5 settled for a confined run: the substrate, the route, the declared reads and the
    trees the view hides."""

    bwrap: str
    bwrap_version: str
    route: ModelRoute | None
    reads: tuple[str, ...]
    home: str | None
    hidden: tuple[str, ...]


@functools.cache
def substrate() -> Result[tuple[str, str], Refusal]:
    """``bwrap`` on ``/usr/bin:/bin`` and its version, once its trial ran (cached per process), or
    ``confine-unavailable`` naming what failed."""
    found = next(
        (os.path.join(d, "bwrap") for d in SUBSTRATE_PATH.split(":") if os.access(os.path.join(d, "bwrap"), os.X_OK)),
        None,
    )
    tail = "; install bubblewrap or pass --confine off"
    if found is None:
        return Failure(Refusal("confine-unavailable", f"bwrap not found on {SUBSTRATE_PATH}{tail}"))
    trial = [found, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--", "/bin/true"]
    try:
        ran = subprocess.run(trial, capture_output=True, timeout=TRIAL_S, check=False)
        version = subprocess.run([found, "--version"], capture_output=True, timeout=TRIAL_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Failure(Refusal("confine-unavailable", f"the bwrap trial did not finish: {error}{tail}"))
    if ran.returncode != 0:
        first = (ran.stderr.decode("utf-8", "replace").splitlines() or [""])[0]
        return Failure(Refusal("confine-unavailable", f"the bwrap trial exited {ran.returncode}: {first}{tail}"))
    words = version.stdout.decode("utf-8", "replace").split()
    return Success((found, words[-1] if words else "unknown"))


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
        return found.failure()
    bwrap, version = found.unwrap()
    kind: Kind = options.kind
    route = model_route(
        kind, options.credentials, options.model_endpoint, custody, _login_is_api_key(kind, caller_env),
        options.model_wire, options.model,
    )  # fmt: skip
    if isinstance(route, Failure):
        return route.failure()
    home = caller_env.get("HOME") or None
    hidden = hidden_trees(custody_files(caller_env))
    reads = check_confine_reads(options.confine_read, home, hidden)
    if isinstance(reads, Failure):
        return reads.failure()
    return Prepared(bwrap=bwrap, bwrap_version=version, route=route.unwrap(), reads=reads.unwrap(), home=home,
                    hidden=hidden)  # fmt: skip


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
    existing files its later words name by absolute path."""
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


class ConfinedSpawn:
    """A planned view, ready to spawn: :attr:`argv` for the live loop's ``Popen`` with :attr:`pass_fds`,
    :meth:`spawned` right after it, and :meth:`namespaces` for rows H12 and H13."""

    def __init__(self, confinement: Confinement) -> None:
        self.confinement = confinement
        self._info_read, self._info_write = os.pipe()
        self.argv: list[str] = [*SIGNAL_SHIELD, *render_bwrap(confinement, self._info_write)]
        self.pass_fds = (self._info_write,)
        self._verdict: Verdict = "unk"
        self._checked = threading.Event()

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

    @staticmethod
    def signal(pid: int, number: int) -> None:
        """Signal the view's init (it forwards to the harness); ``pid`` is the spawned process."""
        os.killpg(pid, number)

    def namespaces(self) -> Verdict:
        """``ok`` when the sandbox's mount and network namespaces both differ from metaharness's own,
        ``gap`` when one is shared, ``unk`` when they could not be read before it ended."""
        self._checked.wait(NAMESPACE_WAIT_S)
        return self._verdict


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
) -> Result[ConfinedSpawn, Refusal]:
    """Plan the view for ``command`` over the gathered facts; ``sockets`` that exist are bound, and so
    are the declared ``inputs`` the harness reads itself (read-only, beside ``--confine-read``)."""
    facts = ConfinementFacts(
        bwrap=prepared.bwrap,
        bwrap_version=prepared.bwrap_version,
        system=system_entries(),
        home=prepared.home,
        hidden=prepared.hidden,
        closure=closure(program, child_path),
        reads=(*prepared.reads, *inputs),
        writable=tuple(writable),
        governing=tuple(path for path in governing if os.path.lexists(path)),
        init=confine_init(),
        scratch=scratch,
        cwd=cwd,
        command=tuple(command),
        route=prepared.route,
        caller_uid=os.getuid(),
        sockets=tuple(path for path in sockets if os.path.exists(path)),
    )
    return plan_confinement(facts).map(ConfinedSpawn)


def start_route(kind: Kind, prepared: Prepared, scratch: str, placeholder: str | None) -> RouteProxy | None:
    """The route proxy on ``<scratch>/route.sock`` when the view has a route (raises ``OSError`` when it
    cannot listen)."""
    route = prepared.route
    if route is None:
        return None
    shape = route_dialect(kind, route.paths[0])
    proxy = RouteProxy(shape, placeholder if route.custody is not None else None, route.custody, route.upstream,
                       route.paths)  # fmt: skip
    try:
        proxy.start(os.path.join(scratch, ROUTE_SOCKET))
    except OSError:
        proxy.stop()
        raise
    return proxy


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
    facts = ConfinementFacts(
        bwrap=bwrap, bwrap_version=version, system=system_entries(), home=home,
        hidden=hidden_trees(custody_files(caller_env)), closure=closure(program, path_floor(caller_env)),
        writable=tuple(writable), init=confine_init(), scratch=scratch, cwd=f"{scratch}/work",
        command=(program,), route=ModelRoute("<the model endpoint>", ()), caller_uid=os.getuid(),
    )  # fmt: skip
    planned = plan_confinement(facts)
    if isinstance(planned, Failure):
        return (f"confinement: unavailable: {planned.failure().message}",)
    return view_lines(planned.unwrap())
