"""The hermetic attestation and the verdict of each row (docs/hermetic.md#terms, #rows, #attestation,
#working-directory, #memory-file-walk, #hermetic-modes, docs/adapters/b10x.md#attestation,
docs/hermetic.md#attestation).

:func:`memory_walk` and :func:`memory_row` decide the ancestor walk over the shell's lstat facts;
:func:`attest` builds ``session.started.hermetic`` from what the launch did; :func:`row_verdicts`
reads the fifteen rows back from the ``session.started`` facts (ok | gap | unk, never ok without
evidence).

Calling order in a run: the shell gathers ``gather_memory_facts(start, MEMORY_SHAPES[kind])``
(``start`` is the temporary directory the scratch root will be created in, or ``--cwd``), then
``memory_row(kind, mode, memory_walk(real, found, scratch_parent=...))`` decides H11 (stage 7,
``memory-ancestor-found``); ``attest(LaunchFacts(...))`` gives ``session.started.hermetic``; after the
session ``row_verdicts(started, VerdictFacts(...))`` and ``control_verdict(rows)`` feed the report.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.adapters import adapter_of
from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import ChildEnvironment
from metaharness.pure.events import Hermetic, InstalledPlugin, RowHow, RowWhy, SessionStarted
from metaharness.pure.kind import KINDS, Kind
from metaharness.pure.modes import DecisionMode, HermeticMode
from metaharness.pure.refusal import Refusal
from metaharness.pure.terminal_text import shown

Verdict = Literal["ok", "gap", "unk"]
WorkdirMode = Literal["scratch", "operator", "copy"]

ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("H1a", "config home is scratch — plugins are exactly the declared set", "record", "gating"),
    ("H1b", "config home is scratch — the output style is the default", "record", "gating"),
    ("H2", "settings sources are excluded", "launch", "advisory"),
    ("H3", "the environment is constructed, not inherited", "launch", "gating"),
    ("H4", "no API key unless the run declared one", "record", "gating"),
    ("H5", "the MCP surface is exactly what the launch gave", "record", "gating"),
    ("H6", "credentials are one file, copied", "effect", "advisory"),
    ("H7", "the working directory is ours", "record", "gating"),
    ("H8", "hooks and customizations are not skipped", "launch", "gating"),
    ("H9", "the vendor version is the pinned one", "record", "gating"),
    ("H10", "governing documents cannot move under the run", "record", "gating"),
    ("H11", "no memory file outside the copied tree is discoverable", "launch", "gating"),
    ("H12", "the child sees only its own tree and the declared reads", "effect", "gating"),
    ("H13", "the network is the model route only", "effect", "gating"),
    ("H14", "the tools cannot reach the harness or its channel", "effect", "gating"),
)
"""The fifteen rows (docs/hermetic.md#rows, docs/confinement.md): id, control (exact report text),
assertion, severity."""

MEMORY_SHAPES: Mapping[str, tuple[str, ...]] = {kind: adapter_of(kind).hermetic.memory.shapes for kind in KINDS}
"""The memory shapes the walk looks for, per kind (docs/hermetic.md#memory-file-walk); ``*.md`` means any entry
directly there."""


class MemoryHit(msgspec.Struct, frozen=True):
    """A memory file found by ``lstat``: its absolute path and the shape it matched."""

    path: str
    shape: str


class MemoryWalk(msgspec.Struct, frozen=True):
    """The walk's outcome: where it started (a real path), the hits above the directory (nearest
    first) and the shapes at the directory's own root (the tree's own, docs/hermetic.md#memory-file-walk)."""

    start: str
    hits: tuple[MemoryHit, ...]
    root_names: tuple[str, ...]


class RowAttestation(msgspec.Struct, frozen=True):
    """One row attested in one of the three states (docs/hermetic.md#terms); ``text`` is the how or the why."""

    row: str
    state: Literal["imposed", "declared", "unavailable"]
    text: str


class DirectoryIdentity(msgspec.Struct, frozen=True):
    """A directory as the shell found it: device and inode when it could be stat'ed, and its real path."""

    real_path: str
    device: int | None = None
    inode: int | None = None


class LaunchFacts(msgspec.Struct, frozen=True):
    """What the launch did, for :func:`attest` (docs/hermetic.md#attestation, #working-directory,
    #memory-file-walk, #credentials).

    ``workdir`` is the child's directory (``<scratch>/work`` or ``--cwd``); ``h3_how`` is
    ``ChildEnvironment.h3_how()``; ``h4_how``/``h6_how`` come from the credential posture;
    ``governing`` names each governing document and how it was pinned (H10); ``mcp_servers`` the
    launch's MCP set (claude ``["metaharness"]`` on an owned-surface or catalogue run); ``hooks`` the
    b10x ``--hooks`` file; ``extra_ambient`` what else reaches the child (e.g. claude's allow grants
    under observe); ``h2_unavailable`` why settings sources reach the child after all (codex skills).
    """

    kind: Kind
    mode: Literal["off", "on", "strict"]
    decisions: Literal["frame", "ask", "observe"]
    scratch: str
    workdir_mode: WorkdirMode
    workdir: str
    h3_how: str
    h4_how: str
    h6_how: str
    memory: RowAttestation
    governing: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    hooks: str | None = None
    installed_plugins: tuple[InstalledPlugin, ...] = ()
    root_memory_names: tuple[str, ...] = ()
    extra_ambient: tuple[str, ...] = ()
    h2_unavailable: str | None = None


class RowVerdict(msgspec.Struct, frozen=True):
    """One row of the hermetic verdict (docs/hermetic.md#audit-report (a))."""

    row: str
    verdict: Verdict
    severity: str
    assertion: str
    control: str
    detail: str

    def line(self) -> str:
        """The report line of docs/hermetic.md#audit-report (a), line breaks in the detail (which can carry
        names a tree the child wrote supplies) replaced by spaces, so it never starts a line of its own, and
        its other control characters escaped (docs/view.md#control-characters)."""
        detail = shown(" ".join(self.detail.splitlines()), one_line=True)
        return f"  {self.row.ljust(4)} {self.verdict.ljust(3)} {self.severity.ljust(8)} {self.assertion.ljust(6)} {self.control} — {detail}"


class ConfigHomeEffect(msgspec.Struct, frozen=True):
    """What a run's scratch config home held after the session, read without following a link (docs/hermetic.md#by-effect):
    whether its config file is byte for byte the launch's, the plugin folders and the credential files found in it,
    the credential files the launch wrote, and the system configuration directories the confined view holds."""

    config_intact: bool
    plugins: tuple[str, ...]
    credentials: tuple[str, ...]
    launch_credentials: tuple[str, ...]
    system_config: tuple[str, ...]


class VerdictFacts(msgspec.Struct, frozen=True):
    """What the verdicts compare the record against (docs/hermetic.md#verdicts).

    ``declared_plugins``: the ``--plugin-dir`` copy names and ``--plugin`` names; ``declared_key``:
    the run ran under ``--credentials api-key``; ``launch_mcp_servers``: the launch's MCP set;
    ``planned_cwd``/``record_cwd``: the two directories as the shell found them (``None`` when there
    is no planned cwd or the record names none); ``pins``: the adapter's pinned versions;
    ``canary_versions``: the claude versions with a memory canary entry; ``namespaces``: the effect
    check of rows H12 and H13 (``ok``: the child's mount and network namespaces differ from
    metaharness's own, ``gap``: one is shared, ``unk``: not read before the child ended); ``home_effect``:
    what the config home held after the session, for a kind whose record is silent on H1a, H1b, H4 and H5;
    ``tools``: the effect check of row H14 (``ok``: the harness's environment, read from outside, names the
    tools' layer's entry; ``gap``: it does not; ``unk``: it could not be read); ``harness_cwd``: the confined
    harness's working directory read from outside, for a kind whose record names none (H7 by effect).
    """

    kind: Kind
    declared_plugins: tuple[str, ...] = ()
    declared_key: bool = False
    launch_mcp_servers: tuple[str, ...] = ()
    planned_cwd: DirectoryIdentity | None = None
    record_cwd: DirectoryIdentity | None = None
    pins: tuple[str, ...] = ()
    canary_versions: tuple[str, ...] = ()
    namespaces: Verdict = "unk"
    home_effect: ConfigHomeEffect | None = None
    tools: Verdict = "unk"
    harness_cwd: DirectoryIdentity | None = None


def workdir_mode(cwd: str | None, scratch_cwd: bool) -> WorkdirMode:
    """``scratch`` without ``--cwd``, ``copy`` with ``--cwd --scratch-cwd``, else ``operator``
    (docs/hermetic.md#working-directory)."""
    if cwd is None:
        return "scratch"
    return "copy" if scratch_cwd else "operator"


class RunShape(Protocol):
    """What a launch's attestation reads of its run's options (``RunOptions`` or a kind's run spec)."""

    @property
    def hermetic(self) -> HermeticMode: ...
    @property
    def decisions(self) -> DecisionMode: ...
    @property
    def cwd(self) -> str | None: ...
    @property
    def scratch_cwd(self) -> bool: ...


def launch_facts(
    kind: Kind,
    run: RunShape,
    launched: tuple[str, str, ChildEnvironment],
    memory: RowAttestation,
    governing: tuple[str | None, str | None, Sequence[ContextFileRead]],
    root_memory_names: tuple[str, ...],
) -> LaunchFacts:
    """The facts every kind's launch attests alike (docs/hermetic.md#attestation): its modes, its scratch root,
    workdir and workdir mode from ``launched`` (scratch, workdir, environment), rows H3/H4/H6 from the
    environment, H11's ``memory``, and H10's governing documents from ``governing`` (frame digest, catalogue
    copy's sha256, the context files); a kind adds its own with ``msgspec.structs.replace``."""
    scratch, workdir, environment = launched
    frame_digest, catalogue_sha256, context = governing
    return LaunchFacts(
        kind=kind,
        mode=run.hermetic,
        decisions=run.decisions,
        scratch=scratch,
        workdir_mode=workdir_mode(run.cwd, run.scratch_cwd),
        workdir=workdir,
        h3_how=environment.h3_how(),
        h4_how=environment.posture.h4_how,
        h6_how=environment.posture.h6_how,
        memory=memory,
        governing=governing_documents(frame_digest, catalogue_sha256, [(item.path, item.sha256) for item in context]),
        root_memory_names=root_memory_names,
    )


def governing_documents(
    frame_digest: str | None = None,
    catalogue_sha256: str | None = None,
    context: Sequence[tuple[str, str]] = (),
    spec_sha256: str | None = None,
) -> tuple[str, ...]:
    """Row H10's names for each governing document and how it was pinned (docs/hermetic.md#verdicts), in this
    order: ``frame <digest>``, ``catalogue copy sha256 <hex>``, ``context <path> sha256 <hex>`` per
    ``(path, sha256)``, ``spec sha256 <hex>``."""
    named = [f"frame {frame_digest}"] if frame_digest is not None else []
    named += [f"catalogue copy sha256 {catalogue_sha256}"] if catalogue_sha256 is not None else []
    named += [f"context {path} sha256 {sha256}" for path, sha256 in context]
    named += [f"spec sha256 {spec_sha256}"] if spec_sha256 is not None else []
    return tuple(named)


def memory_shape_of(name: str) -> str:
    """The shape a found name matched: ``.claude/rules/<x>.md`` is ``.claude/rules/*.md``."""
    return ".claude/rules/*.md" if name.startswith(".claude/rules/") else name


def memory_walk(start: str, found: Mapping[str, Sequence[str]], scratch_parent: bool = False) -> MemoryWalk:
    """The ancestor walk of docs/hermetic.md#memory-file-walk over lstat facts: ``found`` maps each directory from the
    real path ``start`` up to ``/`` to the memory names ``lstat`` found in it. The directory itself
    is excluded and its names are the tree's own; with ``scratch_parent`` (a metaharness scratch
    root not yet created) ``start`` is the temporary directory the root will be created in and is
    itself visited (docs/hermetic.md#memory-file-walk)."""
    hits: list[MemoryHit] = []
    directory = start if scratch_parent else posixpath.dirname(start)
    remaining = scratch_parent or directory != start
    while remaining:
        hits.extend(
            MemoryHit(posixpath.join(directory, name), memory_shape_of(name)) for name in found.get(directory, ())
        )
        parent = posixpath.dirname(directory)
        remaining = parent != directory
        directory = parent
    root_names = () if scratch_parent else tuple(found.get(start, ()))
    return MemoryWalk(start=start, hits=tuple(hits), root_names=root_names)


def memory_row(
    kind: Kind,
    workdir_mode: WorkdirMode,
    walk: MemoryWalk,
    loaded_shapes: frozenset[str] | None = None,
) -> Result[RowAttestation, Refusal]:
    """Row H11 from the walk (docs/hermetic.md#memory-file-walk, #claudes-memory-canary), or ``memory-ancestor-found``
    for a metaharness scratch directory with a hit (codex; claude for a loaded shape). ``loaded_shapes`` is the claude
    canary of the pinned version; ``None`` (no canary entry) counts every shape as loaded."""
    found = ", ".join(hit.path for hit in walk.hits)
    if workdir_mode == "operator":
        why = f"the child runs in the operator's tree {walk.start}; memory files in and above it are discoverable"
        named = [*(posixpath.join(walk.start, name) for name in walk.root_names), *(hit.path for hit in walk.hits)]
        return Success(RowAttestation("H11", "unavailable", why + (f": {', '.join(named)}" if named else "")))
    nothing = f"the ancestor walk from {walk.start} found no memory file"
    found_text = f"the ancestor walk from {walk.start} found {found}"
    memory = adapter_of(kind).hermetic.memory
    if memory.canary:
        loaded = [hit for hit in walk.hits if loaded_shapes is None or hit.shape in loaded_shapes]
        base = '--setting-sources "" and the fresh scratch config home, held to the memory canary; '
        if not loaded:
            suffix = f"{found_text}, not loaded at the pinned version" if walk.hits else nothing
            return Success(RowAttestation("H11", "imposed", base + suffix))
        loaded_text = ", ".join(hit.path for hit in loaded)
        if workdir_mode == "scratch":
            return Failure(Refusal("memory-ancestor-found", f"the ancestor walk from {walk.start} found {loaded_text}"))
        return Success(RowAttestation("H11", "unavailable", f"the ancestor walk from {walk.start} found {loaded_text}"))
    if not walk.hits:
        return Success(RowAttestation("H11", "imposed", nothing + memory.nothing_found_suffix))
    if memory.refused_in_scratch and workdir_mode == "scratch":
        return Failure(Refusal("memory-ancestor-found", found_text))
    return Success(RowAttestation("H11", "unavailable", found_text))


def _workdir_row(facts: LaunchFacts) -> RowAttestation:
    if facts.workdir_mode == "scratch":
        return RowAttestation("H7", "imposed", f"the child runs in {facts.workdir}, which metaharness created")
    if facts.workdir_mode == "copy":
        return RowAttestation(
            "H7",
            "declared",
            f"the embedder declared {facts.workdir} as its scratch copy; metaharness did not create it and passes "
            "no --add-dir",
        )
    return RowAttestation(
        "H7",
        "unavailable",
        f"the child runs in {facts.workdir}, which metaharness did not create, and can write to it"
        + adapter_of(facts.kind).hermetic.grant_in_words,
    )


def _kind_rows(facts: LaunchFacts) -> tuple[RowAttestation, ...]:
    rows = adapter_of(facts.kind).hermetic.launch_rows(facts.scratch, facts.mcp_servers, facts.h2_unavailable, facts.hooks)
    return tuple(RowAttestation(row, state, text) for row, state, text in rows)


def attest(facts: LaunchFacts) -> Hermetic:
    """``session.started.hermetic`` for a launch (docs/hermetic.md#attestation, #working-directory, #memory-file-walk):
    every row in its one state, in row order, ``declared`` always present, and ``ambient_inputs`` naming what no
    row controls."""
    rows = {
        **{row.row: row for row in _kind_rows(facts)},
        "H3": RowAttestation("H3", "imposed", facts.h3_how),
        "H4": RowAttestation("H4", "imposed", facts.h4_how),
        "H6": RowAttestation("H6", "imposed", facts.h6_how),
        "H7": _workdir_row(facts),
        "H10": RowAttestation("H10", "imposed", ", ".join(facts.governing) or "no governing document"),
        "H11": facts.memory,
    }
    ordered = [rows[row] for row, *_ in ROWS if row in rows]
    ambient: list[str] = []
    if adapter_of(facts.kind).hermetic.vendor_ambient:
        ambient += ["the git status in the vendor's system prompt", "the network is not isolated"]
    ambient += [f"memory file at the working directory's root: {name}" for name in facts.root_memory_names]
    ambient += facts.extra_ambient
    return Hermetic(
        mode=facts.mode,
        decisions=facts.decisions,
        imposed=tuple(RowHow(row=r.row, how=r.text) for r in ordered if r.state == "imposed"),
        declared=tuple(RowHow(row=r.row, how=r.text) for r in ordered if r.state == "declared"),
        unavailable=tuple(RowWhy(row=r.row, why=r.text) for r in ordered if r.state == "unavailable"),
        ambient_inputs=tuple(ambient),
        installed_plugins=facts.installed_plugins,
    )


def attested(hermetic: Hermetic, row: str) -> RowAttestation | None:
    """The state a row is attested in, or ``None`` when it is not attested."""
    for state, entries in (("imposed", hermetic.imposed), ("declared", hermetic.declared)):
        for entry in entries:
            if entry.row == row:
                return RowAttestation(row, state, entry.how)  # type: ignore[arg-type]
    for why in hermetic.unavailable:
        if why.row == row:
            return RowAttestation(row, "unavailable", why.why)
    return None


def _quoted(entry: RowAttestation | None) -> str:
    if entry is None:
        return ""
    if entry.state == "unavailable":
        return f"; unavailable: {entry.text}"
    words = "metaharness imposed it" if entry.state == "imposed" else "declared by the embedder"
    return f"; {words}: {entry.text}"


def _listed(names: Sequence[str]) -> str:
    return "[" + ", ".join(names) + "]"


def row_verdicts(started: SessionStarted | None, facts: VerdictFacts) -> tuple[RowVerdict, ...]:
    """The fifteen rows' verdicts from the ``session.started`` facts (docs/hermetic.md#verdicts); with no opening
    record every row is ``unk`` (``no opening record``)."""
    rows: list[RowVerdict] = []
    for row, control, assertion, severity in ROWS:
        verdict, detail = _decide(row, started, facts) if started is not None else ("unk", "no opening record")
        rows.append(RowVerdict(row, verdict, severity, assertion, control, detail))
    return tuple(rows)


def _decide(row: str, started: SessionStarted, facts: VerdictFacts) -> tuple[Verdict, str]:
    entry = attested(started.hermetic, row)
    if row in ("H2", "H3", "H6", "H8"):
        return _launch_row(entry)
    if row == "H11":
        verdict, detail = _launch_row(entry)
        canary = adapter_of(facts.kind).hermetic.memory.canary
        if verdict == "ok" and canary and started.harness_version not in facts.canary_versions:
            return "unk", f"{detail}; version {started.harness_version} has no memory canary entry"
        return verdict, detail
    if row == "H7":
        return _workdir_verdict(entry, started, facts)
    if row in ("H12", "H13"):
        return _effect_verdict(entry, facts.namespaces, _NAMESPACE_WORDS)
    if row == "H14":
        return _effect_verdict(entry, facts.tools, _TOOLS_WORDS)
    deciders = {"H1a": _plugins_verdict, "H1b": _output_style_verdict, "H4": _key_verdict, "H5": _mcp_verdict,
                "H9": _version_verdict, "H10": _governing_verdict}
    verdict, detail = deciders[row](started, facts)
    return verdict, detail + _quoted(entry)


def _launch_row(entry: RowAttestation | None) -> tuple[Verdict, str]:
    if entry is None:
        return "unk", "metaharness did not attest it"
    if entry.state == "unavailable":
        return "gap", f"unavailable: {entry.text}"
    if entry.state == "declared":
        return "unk", f"declared by the embedder, not imposed: {entry.text}"
    return "ok", f"metaharness imposed it: {entry.text}"


_NAMESPACE_WORDS = (
    "the child's mount and network namespaces differ from metaharness's own",
    "but the child shares a mount or network namespace with metaharness",
    "the child ended before its namespaces were read",
)
"""What rows H12 and H13 add to an imposed row for each reading of the view's namespaces: ok, gap, unk."""
_TOOLS_WORDS = (
    "the harness was started with the tools' layer's entry",
    "but the harness was started without the tools' layer's entry",
    "the harness's environment could not be read",
)
"""What row H14 adds to an imposed row for each reading of the harness's environment: ok, gap, unk."""


def _effect_verdict(entry: RowAttestation | None, effect: Verdict, words: tuple[str, str, str]) -> tuple[Verdict, str]:
    """An imposed row checked by its effect after the spawn (docs/hermetic.md#by-effect): the effect's reading, in
    ``words`` (ok, gap, unk); a row not imposed keeps its launch verdict."""
    verdict, detail = _launch_row(entry)
    if verdict != "ok":
        return verdict, detail
    if effect == "ok":
        return "ok", f"{detail}; {words[0]}"
    if effect == "gap":
        return "gap", f"{detail}; {words[1]}"
    return "unk", f"{detail}; {words[2]}"


def _plugins_verdict(started: SessionStarted, facts: VerdictFacts) -> tuple[Verdict, str]:
    declared = sorted(facts.declared_plugins)
    if adapter_of(facts.kind).hermetic.plugins_from_skills:
        if started.skills is None and started.agents is None:
            return "unk", "the record is silent"
        if not declared:
            return "ok", "no plugin was declared"
        prefixes = sorted({entry.split(":", 1)[0] for entry in (*(started.skills or ()), *(started.agents or ()))
                           if ":" in entry})
        stray = [prefix for prefix in prefixes if prefix not in declared]
        if stray:
            return "gap", f"skills and agents name plugins {_listed(stray)} outside the declared set {_listed(declared)}"
        return "ok", f"skills and agents name plugins {_listed(prefixes)} of the declared set {_listed(declared)}"
    if started.plugins is None:
        return _plugins_by_effect(facts, declared)
    builtin = sorted(str(p.name) for p in started.plugins if (p.source or "").endswith("@builtin"))
    names = sorted(str(p.name) for p in started.plugins if not (p.source or "").endswith("@builtin"))
    tail = f"; built-in, not counted: {_listed(builtin)}" if builtin else ""
    if names == declared:
        return "ok", f"plugins {_listed(names)} are the declared set {_listed(declared)}{tail}"
    return "gap", f"plugins {_listed(names)} are not the declared set {_listed(declared)}{tail}"


def _output_style_verdict(started: SessionStarted, facts: VerdictFacts) -> tuple[Verdict, str]:
    no_output_style = adapter_of(facts.kind).hermetic.no_output_style
    if no_output_style is not None:
        return "ok", no_output_style
    style = started.output_style
    if style is None:
        return _by_effect(facts, "the config file is the launch's, which sets no output style")
    if style in ("default", "", "null"):
        return "ok", f'output style "{style}" is the default'
    return "gap", f'output style "{style}" is not the default'


def _key_verdict(started: SessionStarted, facts: VerdictFacts) -> tuple[Verdict, str]:
    source = started.credential_source
    if source is None:
        return _key_by_effect(facts)
    names_key = "api" in source.lower() or "key" in source.lower()
    named = "names a key" if names_key else "names no key"
    declared = "the run declared one" if facts.declared_key else "the run declared none"
    return ("ok" if names_key == facts.declared_key else "gap"), f'credential_source "{source}" {named}; {declared}'


def _mcp_verdict(started: SessionStarted, facts: VerdictFacts) -> tuple[Verdict, str]:
    if started.mcp_servers is None:
        launch_set = _listed(sorted(facts.launch_mcp_servers))
        return _by_effect(facts, f"the config file is the launch's, whose MCP servers are {launch_set}")
    names = sorted(str(server.name) for server in started.mcp_servers)
    launch = sorted(facts.launch_mcp_servers)
    if names == launch:
        return "ok", f"mcp_servers {_listed(names)} are the launch's set {_listed(launch)}"
    return "gap", f"mcp_servers {_listed(names)} are not the launch's set {_listed(launch)}"


def _effect_unknown(facts: VerdictFacts) -> str | None:
    """Why the config home's effect cannot stand in for a silent record (docs/hermetic.md#by-effect), or ``None``."""
    effect = facts.home_effect
    if effect is None:
        return "the record is silent"
    if facts.namespaces != "ok":
        return "the record is silent, and the child was not confined to a view holding only its config home"
    if effect.system_config:
        return f"the record is silent, and the view holds the system configuration {_listed(effect.system_config)}"
    if not effect.config_intact:
        return "the record is silent, and the config file is not the one the launch wrote"
    return None


def _by_effect(facts: VerdictFacts, finding: str) -> tuple[Verdict, str]:
    why = _effect_unknown(facts)
    return ("unk", why) if why is not None else ("ok", f"the record is silent; by effect: {finding}")


def _plugins_by_effect(facts: VerdictFacts, declared: list[str]) -> tuple[Verdict, str]:
    why = _effect_unknown(facts)
    if why is not None or facts.home_effect is None:
        return "unk", why or "the record is silent"
    found = sorted(facts.home_effect.plugins)
    verdict: Verdict = "ok" if found == declared else "gap"
    return verdict, (
        f"the record is silent; by effect: the config home holds plugins {_listed(found)}, "
        f"{'the' if verdict == 'ok' else 'not the'} declared set {_listed(declared)}, and the config file is the launch's"
    )


def _key_by_effect(facts: VerdictFacts) -> tuple[Verdict, str]:
    why = _effect_unknown(facts)
    if why is not None or facts.home_effect is None:
        return "unk", why or "the record is silent"
    found = sorted(facts.home_effect.credentials)
    wrote = sorted(facts.home_effect.launch_credentials)
    if found != wrote:
        return "gap", (
            f"the record is silent; by effect: the config home holds credential files {_listed(found)}, "
            f"the launch wrote {_listed(wrote)}"
        )
    if wrote and not facts.declared_key:
        return "unk", f"the record is silent; the config home holds the copied login {_listed(wrote)}, which may hold a key"
    return "ok", f"the record is silent; by effect: the config home holds credential files {_listed(found)}, the launch's own"


def _version_verdict(started: SessionStarted, facts: VerdictFacts) -> tuple[Verdict, str]:
    version = started.harness_version
    if version is None:
        return "unk", "the record is silent"
    if version in facts.pins:
        return "ok", f"harness_version {version} is pinned"
    return "gap", f"harness_version {version} is not one of the pins {_listed(facts.pins)}"


def _governing_verdict(started: SessionStarted, facts: VerdictFacts) -> tuple[Verdict, str]:
    entry = attested(started.hermetic, "H10")
    return "ok", entry.text if entry is not None and entry.state != "unavailable" else "no governing document"


def same_directory(first: DirectoryIdentity, second: DirectoryIdentity) -> bool:
    """Directories compared as directories (docs/hermetic.md#verdicts H7): equal device and inode when both were
    stat'ed, else equal real paths."""
    if None not in (first.device, first.inode, second.device, second.inode):
        return (first.device, first.inode) == (second.device, second.inode)
    return first.real_path == second.real_path


def _workdir_verdict(
    entry: RowAttestation | None, started: SessionStarted, facts: VerdictFacts
) -> tuple[Verdict, str]:
    if entry is not None and entry.state == "unavailable":
        return "gap", f"unavailable: {entry.text}"
    if entry is None:
        return "unk", "metaharness did not attest it"
    if started.cwd is None:
        return _workdir_by_effect(entry, facts)
    if facts.planned_cwd is None or facts.record_cwd is None:
        return "unk", f"the record's cwd {started.cwd} could not be compared: no planned cwd"
    planned = facts.planned_cwd.real_path
    if not same_directory(facts.record_cwd, facts.planned_cwd):
        return "gap", f"the record's cwd {started.cwd} is not the planned {planned}"
    words = "metaharness imposed it" if entry.state == "imposed" else "declared by the embedder"
    return "ok", f"{words}: {entry.text}; the record's cwd {started.cwd} is the planned {planned}"


def _workdir_by_effect(entry: RowAttestation, facts: VerdictFacts) -> tuple[Verdict, str]:
    """H7 for a record silent on its cwd: the confined harness's working directory, read from outside
    (docs/hermetic.md#by-effect), against the planned one; ``unk`` when it was not read."""
    if facts.harness_cwd is None or facts.planned_cwd is None or facts.namespaces != "ok":
        return "unk", "the record is silent on its cwd"
    planned, found = facts.planned_cwd.real_path, facts.harness_cwd.real_path
    if not same_directory(facts.harness_cwd, facts.planned_cwd):
        return "gap", f"the record is silent on its cwd; by effect: the harness runs in {found}, not the planned {planned}"
    words = "metaharness imposed it" if entry.state == "imposed" else "declared by the embedder"
    return "ok", (f"{words}: {entry.text}; the record is silent on its cwd; by effect: the harness runs in the planned "
                  f"{planned}")


def control_verdict(rows: Sequence[RowVerdict]) -> Verdict:
    """Over gating rows only: ``gap`` if any is gap, else ``unk`` if any is unk, else ``ok``
    (docs/hermetic.md#audit-report (f))."""
    gating = [row.verdict for row in rows if row.severity == "gating"]
    if "gap" in gating:
        return "gap"
    return "unk" if "unk" in gating else "ok"
