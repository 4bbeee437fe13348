"""Confinement: the view a governed child runs in and its one way out, planned over facts (docs/confinement.md).

:func:`plan_confinement` turns the gathered facts (the substrate, the system directories, the
program's closure, the writable directories, the files metaharness wrote, the model route) into an
ordered list of mounts and the command bubblewrap runs, and with it the tools' layer nested inside
(:func:`plan_tool_layer`); :func:`render_bwrap` spells the view as the ``bwrap`` argv and
:func:`render_tool_entry` the tools' layer as the program the harness starts its tools through. :func:`model_route` decides where the child's model traffic goes and
:func:`check_confine_reads` refuses a ``--confine-read`` that would expose a hidden tree.
:func:`confined_hermetic` adds rows H12, H13 and H14 to a launch's attestation and words H6 and H8
for the view.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Literal
from urllib.parse import urlsplit

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.adapter import Loopback
from metaharness.pure.adapters import adapter_of
from metaharness.pure.environment import ChildEnvironment
from metaharness.pure.events import Hermetic, RowHow, RowWhy
from metaharness.pure.hermetic import ROWS, MemoryWalk
from metaharness.pure.kind import Kind
from metaharness.pure.refusal import Refusal

SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys")
"""The system directories bound read-only when they exist; a symbolic link among them is recreated."""
BRIDGE_PORT = 47100
"""The port the bridge listens on inside the child's own network namespace (nothing else listens there)."""
ROUTE_SOCKET = "route.sock"
"""The route proxy's Unix socket under the scratch root, the one thing of the outside in the view."""
TOOL_ENTRY = "layer/tools"
"""The tools' layer's entry program under the scratch root (its folder read-only in the view, absent
in the tools' own)."""
TOOL_PATH = "layer/bin"
"""The folder put first on the harness's PATH when the entry stands in for the program the vendor
finds there (codex's ``bwrap``, gemini's ``bash``): it holds that one name, read-only in the view."""
RESOLVER = "resolv.conf"
"""The view's own resolver configuration under the scratch root, bound over ``/etc/resolv.conf``."""
RESOLVER_TEXT = b"nameserver 127.0.0.1\noptions timeout:0 attempts:1\n"
"""Nothing answers on the view's ``lo``: a lookup fails at once instead of waiting out a timeout."""
PROC_FILES = ("/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/uptime", "/proc/loadavg", "/proc/version")
"""What the tools' layer shows of ``/proc``: a tmpfs holding these system files and no process. The
kernel refuses a fresh ``proc`` mount in a namespace nested in the view (the view's own ``/proc`` has
bwrap's covers), and the view's would list the harness and its descriptors."""
SHELL = "/bin/bash"
"""What a ``shell-prefix`` entry runs the harness's command line with."""
FIXED_FLAGS = ("--unshare-all", "--unshare-user", "--die-with-parent", "--cap-drop", "ALL")
"""The bwrap flags every confined launch carries; never ``--share-net``. Not ``--new-session``: the
child is already spawned in a session of its own with no terminal descriptor, and the run loop's
group signals must reach the view's init."""
ROOT_STAND_IN = 1000
"""The user and group a root caller's child runs as inside the view (mapped to root outside): the
vendors' own sandboxes map their user in a nested namespace, and mapping user 0 needs a capability the
view drops. Not when the view binds a socket of the outside: its peer (the session bus) authenticates
the user the child names, which must then be the caller's own."""
UNCONFINED_VIEW = "--confine off: the child sees the caller's filesystem"
UNCONFINED_NETWORK = "--confine off: the child sees the caller's network"
UNCONFINED_TOOLS = "--confine off: the tools run beside the harness"
NO_COERCION = ("--setenv", "PYTHONCOERCECLOCALE", "0")
"""The view's init is Python: without this its locale coercion would add ``LC_CTYPE`` to the
harness's environment (the init removes the variable again, and bwrap's ``PWD``)."""
ROW_ORDER = tuple(row for row, *_ in ROWS)


class SystemEntry(msgspec.Struct, frozen=True):
    """One of :data:`SYSTEM_ROOTS` as found: its path and, for a symbolic link, its target."""

    path: str
    link: str | None = None


class ModelRoute(msgspec.Struct, frozen=True):
    """The model route: where requests go (``upstream``), the paths the wire may ask for as the child
    sends them (``paths``, each ``POST``), and the custody file whose token is attached (loopback)."""

    upstream: str
    paths: tuple[str, ...]
    custody: str | None = None


class ConfinementFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What a confined launch is planned over, gathered by the shell.

    ``closure``: the program's install roots, the PATH entries holding its link and metaharness's
    own roots (the bridge runs inside); ``reads``: ``--confine-read``; ``sockets``: Unix sockets of the
    outside the child may connect to (the session bus of b10x ``--api-key-secret``); ``writable``: the child's
    directory, its config home, its TMPDIR and the hook channel directory; ``governing``: every file
    metaharness wrote into them (re-bound read-only); ``hidden``: the caller's home root and every
    custody file's directory; ``init``: the argv that starts the in-view init (the shell names its
    own module); ``command``: the harness argv.
    """

    bwrap: str
    bwrap_version: str
    system: tuple[SystemEntry, ...]
    home: str | None
    hidden: tuple[str, ...]
    closure: tuple[str, ...]
    reads: tuple[str, ...] = ()
    writable: tuple[str, ...]
    governing: tuple[str, ...] = ()
    init: tuple[str, ...]
    scratch: str
    cwd: str
    command: tuple[str, ...]
    route: ModelRoute | None = None
    caller_uid: int = 0
    sockets: tuple[str, ...] = ()
    resolver: str | None = None
    tools: ToolGrant | None = None
    covered: tuple[str, ...] = ()
    """Files of the closure the view covers with an empty device (``/dev/null``): a fallback of the vendor's
    own that would start its tools beside the tools' layer (codex's bundled ``bwrap``)."""


class ToolGrant(msgspec.Struct, frozen=True, kw_only=True):
    """What the tools' layer holds besides the read-only system and closure: ``writable``, the child's
    directory when the kind lets its tools write it, and their TMPDIR; ``reads``, files the tools read
    (the catalogue copy its server serves); ``form``, how the entry is handed a command: one shell
    command line (``shell-prefix``) or an argv; ``harness``, the exact command lines (with the program
    each runs) that stay in the harness's layer: the vendor starts its hook through the same prefix,
    and a tool's command line never equals the hook's (the vendor wraps every tool command);
    ``variable``, the environment variable that names the entry to the harness; ``masked``, directories
    in a writable one that the tools' layer covers with an empty tmpfs (the harness's own sockets);
    ``stands_for``, the name the vendor looks up on ``path`` (its PATH) to start every tool, which the
    entry takes the place of in :data:`TOOL_PATH`, then running ``program`` (the real one) in the layer
    with the arguments it was handed (``form`` ``program``); ``own_tmp``, the tools' own TMPDIR bound at the
    shared one's path (source, destination); ``apart``, the absolute globs of the harness's folders there,
    each of which the entry covers with an empty tmpfs of the layer's own."""

    writable: tuple[str, ...]
    reads: tuple[str, ...] = ()
    form: Literal["shell-line", "argv", "program", "bwrap"] = "shell-line"
    harness: tuple[tuple[str, str], ...] = ()
    variable: str | None = None
    masked: tuple[str, ...] = ()
    stands_for: str | None = None
    program: str | None = None
    path: str | None = None
    own_tmp: tuple[str, str] | None = None
    apart: tuple[str, ...] = ()


class Mount(msgspec.Struct, frozen=True):
    """One bwrap operation: ``ro-bind``/``bind`` ``source`` at ``destination``, ``symlink`` (``source`` is
    the target), ``tmpfs``, ``proc``, ``dev`` or ``remount-ro`` at ``destination``."""

    operation: Literal["ro-bind", "bind", "symlink", "tmpfs", "proc", "dev", "remount-ro"]
    destination: str
    source: str | None = None


class Confinement(msgspec.Struct, frozen=True, kw_only=True):
    """A planned view: the substrate, the mounts in order, the directory, the command bwrap runs (the
    init and the harness after it) and the route."""

    bwrap: str
    bwrap_version: str
    mounts: tuple[Mount, ...]
    chdir: str
    command: tuple[str, ...]
    closure: tuple[str, ...]
    writable: tuple[str, ...]
    route: ModelRoute | None
    socket: str | None
    identity: tuple[str, ...] = ()
    tools: ToolLayer | None = None


class ToolLayer(msgspec.Struct, frozen=True, kw_only=True):
    """The inner layer the tools run in, nested in the view: its own PID, mount and network namespaces
    (no route), the mounts in order, and the entry program the harness starts each tool through (named
    by ``variable``, or found first on the harness's ``path``, which the view sets, running ``program``)."""

    bwrap: str
    entry: str
    mounts: tuple[Mount, ...]
    writable: tuple[str, ...]
    form: Literal["shell-line", "argv", "program", "bwrap"]
    harness: tuple[tuple[str, str], ...] = ()
    variable: str | None = None
    program: str | None = None
    path: str | None = None
    apart: tuple[str, ...] = ()


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def exposes(path: str, home: str | None, hidden: Sequence[str]) -> str | None:
    """The hidden tree ``path`` would expose, or ``None``: it is or contains the caller's home root, or it
    is, contains or lies inside a custody file's directory."""
    normal = posixpath.normpath(path)
    if home and _inside(posixpath.normpath(home), normal):
        return home
    return next((tree for tree in hidden if _inside(normal, tree) or _inside(tree, normal)), None)


def check_confine_reads(reads: Sequence[str], home: str | None, hidden: Sequence[str]) -> Result[tuple[str, ...], Refusal]:
    """Each ``--confine-read DIR`` normalised, or ``confine-read-exposes`` naming the first that exposes a
    hidden tree."""
    for read in reads:
        tree = exposes(read, home, hidden)
        if tree is not None:
            return Failure(
                Refusal("confine-read-exposes", f"--confine-read {read} would expose {tree}, which the view hides")
            )
    return Success(tuple(posixpath.normpath(read) for read in reads))


def hidden_trees(custody_files: Sequence[str]) -> tuple[str, ...]:
    """The custody files' directories (the caller's home root is hidden separately)."""
    return tuple(sorted({posixpath.dirname(posixpath.normpath(path)) for path in custody_files}))


def install_root(real_path: str, venv_homes: Mapping[str, str | None]) -> tuple[str, ...]:
    """The install roots of one real path: its nearest ancestor named ``node_modules``; else its nearest
    ancestor holding ``pyvenv.cfg`` (``venv_homes`` maps each such ancestor to its ``home`` key) plus
    the base interpreter's prefix; else the file itself."""
    directory = posixpath.dirname(real_path)
    while directory != "/":
        if posixpath.basename(directory) == "node_modules":
            return (directory,)
        directory = posixpath.dirname(directory)
    directory = posixpath.dirname(real_path)
    while directory != "/":
        if directory in venv_homes:
            home = venv_homes[directory]
            return (directory, posixpath.dirname(home.rstrip("/"))) if home else (directory,)
        directory = posixpath.dirname(directory)
    return (real_path,)


def shebang_interpreter(first_line: bytes) -> tuple[str, ...]:
    """The interpreter a script's first line names: ``("/path",)``, ``("env", NAME)`` for
    ``/usr/bin/env NAME``, or ``()`` when it is not a script."""
    if not first_line.startswith(b"#!"):
        return ()
    words = first_line[2:].decode("utf-8", "replace").split()
    if not words:
        return ()
    if posixpath.basename(words[0]) == "env" and len(words) > 1:
        return ("env", words[-1])
    return (words[0],)


def named_paths(argv: Sequence[str]) -> tuple[str, ...]:
    """The words after a program's name that are absolute paths: what a program started from the view
    is handed to read (an interpreter's script, a policy file), bound read-only beside the program's
    own closure when they exist."""
    return tuple(posixpath.normpath(word) for word in argv[1:] if word.startswith("/"))


def model_route(
    kind: Kind,
    credentials: str,
    endpoint: str | None,
    custody: str | None,
    login_is_api_key: bool,
    wire: str | None = None,
    model: str | None = None,
) -> Result[ModelRoute | None, Refusal]:
    """The model route of a confined launch (:func:`_planned_route`), or ``confine-route-unavailable``,
    also when a route is needed and the kind declares no route dialect (docs/confinement.md)."""
    planned = _planned_route(kind, credentials, endpoint, custody, login_is_api_key, wire, model)
    if adapter_of(kind).confinement.route_dialect is not None:
        return planned
    no_route = Refusal(
        "confine-route-unavailable",
        f"{kind} has no confined model route; pass --confine off (the child then reaches its model unconfined)",
    )
    return planned.bind(lambda route: Success(None) if route is None else Failure(no_route))


def route_dialect(kind: Kind, first_path: str) -> Loopback | None:
    """Whose API a confined route of ``kind`` speaks (the route proxy answers in its shape), as the kind's
    adapter declares it from the route's first path; ``None`` when it declares no route."""
    dialect = adapter_of(kind).confinement.route_dialect
    return None if dialect is None else dialect(first_path)


def _planned_route(
    kind: Kind,
    credentials: str,
    endpoint: str | None,
    custody: str | None,
    login_is_api_key: bool,
    wire: str | None,
    model: str | None,
) -> Result[ModelRoute | None, Refusal]:
    """The model route a confined launch plans, or ``confine-route-unavailable``.

    loopback: the custody token attached on the way to the endpoint or the vendor's API; an endpoint
    (``none`` with ``--model-endpoint``, b10x): forwarded verbatim to it; claude ``api-key`` and
    ``operator-login``, codex ``api-key`` (and an ``auth.json`` holding a key): the vendor's API;
    codex's ChatGPT-plan login cannot be pointed at the bridge; ``none`` without an endpoint has none.
    """
    route = adapter_of(kind).confinement.vendor_route
    named = adapter_of(kind).confinement.endpoint_paths
    loopback = adapter_of(kind).loopback
    if route is None and named is not None and credentials == "loopback" and loopback is not None:
        return Success(ModelRoute(endpoint.rstrip("/") if endpoint else loopback.upstream, named(model), custody))
    if route is None:
        if endpoint is None:
            return Success(None)
        prefix = urlsplit(endpoint).path.rstrip("/")
        if named is not None:
            return Success(ModelRoute(_origin(endpoint), tuple(prefix + path for path in named(model))))
        tail = "/messages" if wire == "anthropic-messages" else "/responses"
        return Success(ModelRoute(_origin(endpoint), (prefix + tail,)))
    wire_paths = route.wire_paths
    if credentials == "loopback":
        root = endpoint.rstrip("/") if endpoint else route.upstream
        return Success(ModelRoute(root, wire_paths, custody))
    if endpoint is not None:
        prefix = urlsplit(endpoint).path.rstrip("/")
        return Success(ModelRoute(_origin(endpoint), tuple(prefix + path for path in wire_paths)))
    if credentials == "none":
        return Success(None)
    if route.login_needs_api_key and credentials == "operator-login" and not login_is_api_key:
        return Failure(
            Refusal(
                "confine-route-unavailable",
                f"--credentials operator-login on {kind} with a ChatGPT-plan login cannot be pointed at the model "
                "route; pass --confine off (the child then reaches the vendor unconfined), or log in with an API key, "
                f"or pass --credentials api-key with {' or '.join(adapter_of(kind).credentials.api_key_variables)} set",
            )
        )
    return Success(ModelRoute(route.upstream, wire_paths))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def bridge_url(endpoint: str | None) -> str:
    """What the child is pointed at in place of ``endpoint``: the bridge on ``127.0.0.1`` with the
    endpoint's own path kept."""
    path = urlsplit(endpoint).path.rstrip("/") if endpoint else ""
    return f"http://127.0.0.1:{BRIDGE_PORT}{path}"


def _system_mounts(facts: ConfinementFacts) -> list[Mount]:
    """The read-only system, ``/proc``, ``/dev``, fresh ``/tmp`` and ``/dev/shm``, the caller's home as an
    empty tmpfs: what both layers start from."""
    mounts = [
        Mount("symlink", entry.path, entry.link) if entry.link is not None else Mount("ro-bind", entry.path, entry.path)
        for entry in facts.system
    ]
    mounts += [Mount("proc", "/proc"), Mount("dev", "/dev"), Mount("tmpfs", "/tmp"), Mount("tmpfs", "/dev/shm")]
    if facts.home:
        mounts.append(Mount("tmpfs", facts.home))
    return mounts


def _outermost(paths: Sequence[str]) -> tuple[str, ...]:
    named = tuple(dict.fromkeys(posixpath.normpath(path) for path in paths))
    return tuple(path for path in named if not any(path != other and _inside(path, other) for other in named))


def _governing_folders(facts: ConfinementFacts, writable: Sequence[str]) -> tuple[str, ...]:
    """The folders of the governing files that lie in the scratch root outside every writable
    directory (``hooks/``, a settings folder): bound read-only whole, so none can be renamed away."""
    folders = (posixpath.dirname(posixpath.normpath(path)) for path in facts.governing)
    return tuple(dict.fromkeys(
        folder for folder in folders
        if _inside(folder, facts.scratch) and folder != posixpath.normpath(facts.scratch)
        and not any(_inside(folder, directory) for directory in writable)
    ))  # fmt: skip


def plan_confinement(facts: ConfinementFacts) -> Result[Confinement, Refusal]:
    """The view, in order (a later mount over an earlier one wins): the read-only system, ``/proc``,
    ``/dev``, fresh ``/tmp`` and ``/dev/shm``, the caller's home as an empty tmpfs, the scratch root as
    an empty tmpfs, the closure and the declared reads read-only (a covered file an empty device), the four writable kinds, the
    governing folders and files read-only again, the route socket, the view's resolver; then the
    scratch root and ``/`` remounted read-only, so nothing can be renamed or planted beside what
    governs. With ``facts.tools`` the tools' layer is planned too (:func:`plan_tool_layer`). Refuses
    ``confine-read-exposes`` when a bound path would expose a hidden tree."""
    bound = (*facts.closure, *facts.reads, *facts.writable, *facts.governing, *facts.sockets)
    for path in bound:
        tree = exposes(path, facts.home, facts.hidden)
        if tree is not None:
            return Failure(
                Refusal("confine-read-exposes", f"the view would bind {path}, which exposes {tree}, a hidden tree")
            )
    mounts = _system_mounts(facts)
    mounts.append(Mount("tmpfs", facts.scratch))
    closure = _outermost(facts.closure)
    mounts += [Mount("ro-bind", path, path) for path in (*closure, *facts.reads)]
    mounts += [Mount("ro-bind", path, "/dev/null") for path in facts.covered]
    writable = tuple(dict.fromkeys(posixpath.normpath(path) for path in facts.writable))
    mounts += [Mount("bind", path, path) for path in writable]
    governing = (*_governing_folders(facts, writable), *facts.governing, *facts.sockets)
    mounts += [Mount("ro-bind", path, path) for path in dict.fromkeys(governing)]
    socket = posixpath.join(facts.scratch, ROUTE_SOCKET) if facts.route is not None else None
    init = list(facts.init)
    if socket is not None:
        mounts.append(Mount("ro-bind", socket, socket))
        init += ["--bridge", str(BRIDGE_PORT), "--socket", socket]
    if facts.resolver is not None:
        mounts.append(Mount("ro-bind", "/etc/resolv.conf", facts.resolver))
    mounts += [Mount("remount-ro", facts.scratch), Mount("remount-ro", "/")]
    return Success(
        Confinement(
            bwrap=facts.bwrap,
            bwrap_version=facts.bwrap_version,
            mounts=tuple(mounts),
            chdir=facts.cwd,
            command=(*init, "--", *facts.command),
            closure=closure,
            writable=writable,
            route=facts.route,
            socket=socket,
            identity=(
                ("--uid", str(ROOT_STAND_IN), "--gid", str(ROOT_STAND_IN))
                if facts.caller_uid == 0 and not facts.sockets
                else ()
            ),
            tools=None if facts.tools is None else plan_tool_layer(facts, facts.tools),
        )
    )


def plan_tool_layer(facts: ConfinementFacts, grant: ToolGrant) -> ToolLayer:
    """The tools' layer (docs/confinement.md#two-layers), started by the harness inside the view: the
    same read-only system (the view's resolver with it), closure and declared reads, a ``/proc`` with
    no process in it (:data:`PROC_FILES`), its own ``/tmp`` and home, writable only ``grant.writable``,
    the grant's reads, its masked directories empty, and nothing else of the scratch root (no hook
    program, channel, settings, record or transcript: it is an empty tmpfs, read-only once the grant is
    bound in it); ``/`` read-only; its own PID namespace, and its own network namespace with no route."""
    mounts = [Mount("tmpfs", "/proc") if mount.operation == "proc" else mount for mount in _system_mounts(facts)]
    mounts += [Mount("ro-bind", path, path) for path in PROC_FILES]
    mounts.append(Mount("tmpfs", facts.scratch))
    mounts += [Mount("ro-bind", path, path) for path in (*_outermost(facts.closure), *facts.reads, *grant.reads)]
    writable = tuple(dict.fromkeys(posixpath.normpath(path) for path in grant.writable))
    mounts += [Mount("ro-bind" if grant.form == "bwrap" else "bind", path, path) for path in writable]
    if grant.own_tmp is not None:
        mounts.append(Mount("bind", grant.own_tmp[1], grant.own_tmp[0]))
        writable += (grant.own_tmp[1],)
    mounts += [Mount("tmpfs", path) for path in grant.masked]
    mounts += [Mount("remount-ro", facts.scratch), Mount("remount-ro", "/")]
    folder = posixpath.join(facts.scratch, TOOL_PATH)
    entry = posixpath.join(facts.scratch, TOOL_ENTRY) if grant.stands_for is None else posixpath.join(
        folder, grant.stands_for)  # fmt: skip
    path = None if grant.stands_for is None else f"{folder}:{grant.path}" if grant.path else folder
    return ToolLayer(
        bwrap=facts.bwrap, entry=entry, mounts=tuple(mounts), writable=writable,
        form=grant.form, harness=grant.harness, variable=grant.variable, program=grant.program, path=path,
        apart=grant.apart,
    )  # fmt: skip


def _mount_words(mounts: Sequence[Mount]) -> list[str]:
    argv: list[str] = []
    for mount in mounts:
        if mount.operation in ("ro-bind", "bind"):
            argv += [f"--{mount.operation}", mount.source or mount.destination, mount.destination]
        elif mount.operation == "symlink":
            argv += ["--symlink", mount.source or "", mount.destination]
        else:
            argv += [f"--{mount.operation}", mount.destination]
    return argv


def render_tool_entry(layer: ToolLayer) -> bytes:
    """The entry program the harness starts each tool through: a ``/bin/sh`` script that replaces
    itself with the tools' layer's ``bwrap``, running the one command line it is handed with
    :data:`SHELL` (``shell-line``), the argv it is handed (``argv``), or the real program it stands in
    for with the arguments it is handed (``program``); a command line that is exactly one of
    ``layer.harness`` (``program``: handed as ``-c LINE``) runs its program where the harness is instead."""
    words = [layer.bwrap, *FIXED_FLAGS, *_mount_words(layer.mounts), "--"]
    tails = {"shell-line": f'{SHELL} -c "$1"', "argv": '"$@"', "program": f'{_sh_quote(layer.program or "")} "$@"'}
    handed = '[ "$#" = 1 ] && [ "$1" = {} ]' if layer.form != "program" else '[ "$#" = 2 ] && [ "$1" = -c ] && [ "$2" = {} ]'
    kept = "".join(
        f"if {handed.format(_sh_quote(line))}; then exec {_sh_quote(program)}; fi\n" for line, program in layer.harness
    )
    if layer.form == "bwrap":
        return _bwrap_entry(layer, words[:-1])
    if layer.apart and layer.form == "program":
        globs = " ".join("*".join(_sh_quote(part) for part in name.split("*")) for name in layer.apart)
        static = " ".join(_sh_quote(word) for word in words[:-1])
        return f"#!/bin/sh\n{kept}{APART.format(globs=globs, program=_sh_quote(layer.program or ''), words=static)}".encode()
    run = f"{' '.join(_sh_quote(word) for word in words)} {tails[layer.form]}"
    return f"#!/bin/sh\n{kept}exec {run}\n".encode()


APART = """handed=$#
for folder in {globs}; do
  if [ -d "$folder" ] && [ ! -L "$folder" ]; then set -- "$@" --tmpfs "$folder"; fi
done
set -- "$@" -- {program}
while [ "$handed" -gt 0 ]; do set -- "$@" "$1"; shift; handed=$((handed - 1)); done
exec {words} "$@"
"""
"""The entry of a layer whose TMPDIR is its own (``ToolLayer.apart``): each of the harness's folders for one tool
that is there when the layer starts (the command's own among them) is an empty tmpfs in the layer, so what a
command writes at that name (the file Gemini CLI reads back, or a link or FIFO in its place) stays in the layer
and the harness's folder is never written by a tool, whichever command or how many at once, and whether the
entry ends or is killed (docs/confinement.md#two-layers). It replaces itself with the layer's ``bwrap``."""


BWRAP_ENTRY = """#!/bin/sh
if [ "$#" = 1 ] && {{ [ "$1" = --help ] || [ "$1" = --version ]; }}; then exec {real} "$1"; fi
quote() {{ printf "'%s' " "$1"; }}
kept=
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
  case "$1" in
  --bind|--ro-bind|--ro-bind-try)
    [ "$#" -ge 3 ] || break
    if [ "$2" = "$3" ] && [ "${{3#*\\'}}" = "$3" ] && [ "${{3#*/..}}" = "$3" ]; then
      case "$1:$3" in
      {granted}) kept="$kept$(quote "$1")$(quote "$2")$(quote "$3")";;
      esac
    fi
    shift 3;;
  *) shift;;
  esac
done
if [ "$1" != -- ]; then echo "metaharness: the tools' layer runs only a command after --" >&2; exit 125; fi
shift
eval "set -- $kept-- \\"\\$@\\""
exec {layer} "$@"
"""
"""The tools' layer's entry standing in for ``bwrap`` (docs/confinement.md#two-layers): ``--help`` and
``--version`` alone are the real program's; anything else runs the command after ``--`` in the tools'
layer, keeping of the vendor's own mounts only a writable bind of a granted directory (read-only in the
layer until the vendor binds it) and a read-only bind inside one (a path with a single quote is left
out, and one naming ``..``), so its sandbox's grant holds and nothing is granted past the layer's."""


def _bwrap_entry(layer: ToolLayer, words: Sequence[str]) -> bytes:
    granted = "|".join(
        [*(f"--bind:{_sh_quote(path)}" for path in layer.writable),
         *(f"--ro-bind:{_sh_quote(path)}/*|--ro-bind-try:{_sh_quote(path)}/*" for path in layer.writable)]
    )  # fmt: skip
    return BWRAP_ENTRY.format(
        real=_sh_quote(layer.program or layer.bwrap), granted=granted or "''", layer=" ".join(map(_sh_quote, words))
    ).encode()


def _sh_quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def render_bwrap(confinement: Confinement, info_fd: int | None = None) -> tuple[str, ...]:
    """The ``bwrap`` argv of a planned view; ``info_fd`` is where bwrap writes the sandbox's pid. A tools'
    layer found on the harness's PATH sets that PATH (:data:`TOOL_PATH` first) for the harness."""
    argv: list[str] = [confinement.bwrap, *FIXED_FLAGS, *confinement.identity, *NO_COERCION]
    if confinement.tools is not None and confinement.tools.path is not None:
        argv += ["--setenv", "PATH", confinement.tools.path]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    argv += _mount_words(confinement.mounts)
    return (*argv, "--chdir", confinement.chdir, "--", *confinement.command)


def _mount_lines(mounts: Sequence[Mount], indent: str) -> list[str]:
    lines = []
    for mount in mounts:
        if mount.operation == "symlink":
            lines.append(f"{indent}symlink {mount.destination} -> {mount.source}")
        elif mount.source == "/dev/null":
            lines.append(f"{indent}covered {mount.destination}")
        elif mount.operation in ("ro-bind", "bind"):
            lines.append(f"{indent}{'ro' if mount.operation == 'ro-bind' else 'rw'} {mount.destination}")
        else:
            lines.append(f"{indent}{mount.operation} {mount.destination}")
    return lines


def view_lines(confinement: Confinement) -> tuple[str, ...]:
    """The view as ``doctor`` prints it: the substrate, each mount with its mode, the route, then the
    tools' layer's mounts when the kind's tools enter one."""
    lines = [f"confinement: {confinement.bwrap} ({confinement.bwrap_version})"]
    lines += _mount_lines(confinement.mounts, "  ")
    route = confinement.route
    lines.append(f"  network: {'model route to ' + route.upstream if route is not None else 'no route'}")
    if confinement.tools is not None:
        lines.append(f"  tools' layer, entered through {confinement.tools.entry}: own PID and network namespace")
        lines += _mount_lines(confinement.tools.mounts, "    ")
        lines.append("    network: no route")
    return tuple(lines)


def _h12(confinement: Confinement) -> str:
    return (
        f"bwrap {confinement.bwrap_version}: read-only system, program closure {', '.join(confinement.closure)}, "
        f"writable {', '.join(confinement.writable)}; the caller's home and /tmp hidden"
    )


def _h13(confinement: Confinement) -> str:
    if confinement.route is None or confinement.socket is None:
        return "own network namespace; no route"
    return f"own network namespace; the model route to {confinement.route.upstream} through {confinement.socket}"


def _h14(kind: Kind, confinement: Confinement) -> RowHow | RowWhy:
    """Row H14 as the kind's tools enter the inner layer: imposed with the layer's words, or
    unavailable naming why."""
    entry = adapter_of(kind).confinement.tools
    layer = confinement.tools
    if entry.mechanism == "unavailable":
        return RowWhy(row="H14", why=entry.how)
    if layer is None:
        return RowWhy(row="H14", why="no tools' layer was planned")
    led = "" if layer.path is None else f" ({posixpath.dirname(layer.entry)} first on its PATH)"
    return RowHow(
        row="H14",
        how=f"{entry.how}{led}: own PID, mount and network namespace (no route), writable {', '.join(layer.writable)}, "
        "nothing else of the scratch root",
    )


def tools_entered(layer: ToolLayer, environ: bytes, uncovered: Sequence[str] = ()) -> Literal["ok", "gap"]:
    """Row H14's effect check over the harness's environment as read from outside the view (NUL-separated):
    ``ok`` when it names the entry as the vendor starts its tools through it: ``variable=<entry>``, or, for
    an entry found on PATH, exactly the PATH the view set (the entry's read-only folder first), and no
    covered fallback (:func:`covered_files`) was found ``uncovered`` in the harness's view; else ``gap``."""
    expected = f"PATH={layer.path}" if layer.path is not None else f"{layer.variable}={layer.entry}"
    return "ok" if expected.encode() in environ.split(b"\0") and not uncovered else "gap"


def covered_files(confinement: Confinement) -> tuple[str, ...]:
    """The files the view covers with an empty device (``ConfinementFacts.covered``)."""
    return tuple(mount.destination for mount in confinement.mounts if mount.source == "/dev/null")


def _reworded(entries: tuple[RowHow, ...], extra: Mapping[str, str]) -> tuple[RowHow, ...]:
    return tuple(RowHow(row=entry.row, how=entry.how + extra.get(entry.row, "")) for entry in entries)


def in_view(path: str, confinement: Confinement) -> bool:
    """Whether ``path`` lies under one of the view's binds."""
    return any(
        mount.operation in ("bind", "ro-bind") and _inside(path, mount.destination) for mount in confinement.mounts
    )


def _memory_row(memory: MemoryWalk, confinement: Confinement) -> RowHow | None:
    """Row H11 imposed when every memory file the walk found above the child's directory is outside the
    view; ``None`` when one is inside it (the row keeps its words)."""
    if any(in_view(hit.path, confinement) for hit in memory.hits):
        return None
    found = ", ".join(hit.path for hit in memory.hits)
    above = f"the ancestor walk from {memory.start} found {found}, not in the view" if found else (
        f"the ancestor walk from {memory.start} found no memory file")  # fmt: skip
    return RowHow(row="H11", how=above + "; memory files in the child's own tree are its ambient inputs")


def confined_hermetic(
    hermetic: Hermetic,
    confinement: Confinement | None,
    loopback: bool,
    kind: Kind,
    memory: MemoryWalk | None = None,
) -> Hermetic:
    """The attestation with rows H12, H13 and H14: imposed with the view's words when confined (H6 under
    loopback, H8, codex's H7 under ``--cwd`` then say what the view holds; an unavailable H11 whose memory
    files above the child's directory are all outside the view is imposed; the network is no longer an
    ambient input; H14 as the kind's tools enter the inner layer), ``unavailable`` under ``--confine off``."""
    if confinement is None:
        unavailable = (*hermetic.unavailable, RowWhy(row="H12", why=UNCONFINED_VIEW),
                       RowWhy(row="H13", why=UNCONFINED_NETWORK), RowWhy(row="H14", why=UNCONFINED_TOOLS))  # fmt: skip
        return msgspec.structs.replace(hermetic, unavailable=unavailable)
    extra = {"H8": "; the hook program and settings are read-only in the child's view"}
    variable = adapter_of(kind).confinement.tools.variable
    if variable is not None and confinement.tools is not None:
        extra["H3"] = f", {variable}"
    if loopback:
        extra["H6"] = "; the custody file is outside the child's view"
    grant = adapter_of(kind).confinement.view_grant
    unavailable = tuple(
        RowWhy(row=entry.row, why=entry.why + (grant if entry.row == "H7" else "")) for entry in hermetic.unavailable
    )
    memory_row = None
    if memory is not None and any(entry.row == "H11" for entry in unavailable):
        memory_row = _memory_row(memory, confinement)
    if memory_row is not None:
        unavailable = tuple(entry for entry in unavailable if entry.row != "H11")
    tools = _h14(kind, confinement)
    if isinstance(tools, RowWhy):
        unavailable = (*unavailable, tools)
    imposed = sorted(
        (*_reworded(hermetic.imposed, extra), *((memory_row,) if memory_row else ()),
         RowHow(row="H12", how=_h12(confinement)), RowHow(row="H13", how=_h13(confinement)),
         *((tools,) if isinstance(tools, RowHow) else ())),
        key=lambda entry: ROW_ORDER.index(entry.row),
    )  # fmt: skip
    ambient = tuple(entry for entry in hermetic.ambient_inputs if entry != "the network is not isolated")
    return msgspec.structs.replace(hermetic, imposed=tuple(imposed), unavailable=unavailable, ambient_inputs=ambient)


def tool_entry_variables(kind: Kind, variables: Sequence[tuple[str, str]], confinement: Confinement) -> tuple[tuple[str, str], ...]:
    """The harness's environment with the variable that makes it start its tools through the tools'
    layer's entry (claude: ``CLAUDE_CODE_SHELL_PREFIX``), sorted by key; unchanged without one."""
    variable = adapter_of(kind).confinement.tools.variable
    if variable is None or confinement.tools is None:
        return tuple(variables)
    return tuple(sorted({**dict(variables), variable: confinement.tools.entry}.items()))


def pointed_at_bridge(kind: Kind, variables: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The child's environment with the vendor's API replaced by the bridge (claude ``api-key`` and
    ``operator-login``: ``ANTHROPIC_BASE_URL``; codex: ``OPENAI_BASE_URL``), sorted by key."""
    route = adapter_of(kind).confinement.vendor_route
    pointed = {} if route is None else {route.base_url_variable: f"http://127.0.0.1:{BRIDGE_PORT}{route.base_url_path}"}
    return tuple(sorted({**dict(variables), **pointed}.items()))


def tool_entry_environment(kind: Kind, environment: ChildEnvironment, confinement: Confinement) -> ChildEnvironment:
    """The child's environment with its tools' layer's entry (:func:`tool_entry_variables`)."""
    return msgspec.structs.replace(environment, variables=tool_entry_variables(kind, environment.variables, confinement))


def bridged_environment(kind: Kind, environment: ChildEnvironment) -> ChildEnvironment:
    """The child's environment with the vendor's API replaced by the bridge (:func:`pointed_at_bridge`)."""
    return msgspec.structs.replace(environment, variables=pointed_at_bridge(kind, environment.variables))
