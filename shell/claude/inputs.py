"""Stages 5–7 of ``metaharness run claude`` (docs/hermetic.md#refusal-order): the owned surface, the credential, the
view's refusals, the declared inputs and the tree checks, decided before the kind's run module is imported, so a
refusal there starts no more of metaharness than deciding it needs (docs/DEVELOPING.md#the-run-engine).

They read only (the caller's environment, its files, the bwrap trial); what they gathered is handed on as one
:class:`ClaudeInputs` to ``metaharness.shell.claude.run``.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.claude.plugins import PluginCopy, PluginFile, PluginTree, plan_plugins
from metaharness.pure.claude.vendor import KIND
from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import (
    EnvironmentDeclaration,
    credential_posture,
    custody_missing,
    loopback_custody_token,
    operator_login_file,
)
from metaharness.pure.frames import Frame, refuse_frame_beside_observe
from metaharness.pure.hermetic import MEMORY_SHAPES, MemoryWalk
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import open_regular
from metaharness.shell.confinement import Prepared, prepare
from metaharness.shell.context_files import load_context_files
from metaharness.shell.facts import caller_environment, readable_regular_file
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.staging import Refused, check_held, is_directory, take, unusable_directory
from metaharness.shell.tree_facts import memory_walk_of

if TYPE_CHECKING:
    from metaharness.pure.catalogue import Catalogue

NOT_BUILT = Refusal(
    "not-built",
    "--tool-surface owned without --catalogue is not built in this build for claude: it waits for "
    "the owned verbs' call resolution (docs/adapters/claude.md#owned-surface-and-catalogue)",
)
"""The owned surface without a catalogue (its three verbs), refused rather than run as the native one."""


class ClaudeInputs(msgspec.Struct, frozen=True, kw_only=True):
    """What stages 5–7 of a claude run gathered: the caller's environment and directory, the custody file under
    loopback, the view's settled facts (``None`` unconfined), the declared inputs, the memory walk, the plugins."""

    caller_env: dict[str, str]
    caller_cwd: str
    custody: str | None
    prepared: Prepared | None
    context: tuple[ContextFileRead, ...]
    catalogue: Catalogue | None
    frame: Frame | None
    walk: MemoryWalk
    plugins: tuple[PluginCopy, ...]


def declaration_of(options: RunOptions) -> EnvironmentDeclaration:
    """The credential, endpoint and actor declarations of a claude run (docs/hermetic.md#environment-floor,
    #credentials); under loopback the port stays symbolic until the proxy listens (docs/hermetic.md#refusal-order
    stage 8)."""
    return EnvironmentDeclaration(
        kind=KIND, credentials=options.credentials, actor=options.actor, model_endpoint=options.model_endpoint
    )


def credentials_stage(options: RunOptions, caller_env: dict[str, str]) -> str | None:
    """Stage 5 (docs/hermetic.md#refusal-order): the declared credential's refusals; under loopback the custody file is
    parsed once (``loopback-custody-unreadable``). Returns the custody path under loopback."""
    declaration = declaration_of(options)
    custody = operator_login_file(KIND, caller_env)
    if options.credentials == "loopback":
        try:
            with open(custody or "", "rb") as handle:
                data = handle.read()
        except OSError as error:
            raise Refused(custody_missing(KIND, custody, str(error.strerror or error))) from None
        take(loopback_custody_token(KIND, data))
        return custody
    take(credential_posture(declaration, caller_env, readable_regular_file(custody)))
    return None


def declared_inputs(options: RunOptions) -> tuple[tuple[ContextFileRead, ...], Catalogue | None, Frame | None]:
    """Stage 6: ``cwd-unusable``, ``retain-dir-unusable``, the ``--context`` refusals, the catalogue
    file's refusals (before the frame), the frame's refusals and ``observe-with-frame``."""
    unusable = unusable_directory(options)
    if unusable is not None:
        raise Refused(unusable)
    context = take(load_context_files(options.cwd, options.context)) if options.context else ()
    catalogue = take(_read_catalogue(options.catalogue)) if options.catalogue is not None else None
    frame = take(read_frame_file(options.frame)) if options.frame is not None else None
    take(refuse_frame_beside_observe(options.decisions, options.frame))
    return context, catalogue, frame


def _read_catalogue(path: str) -> Result[Catalogue, Refusal]:
    """The ``--catalogue`` file read and checked; its modules are imported here, so a run without one refused before
    its plan loads none of them."""
    from metaharness.shell.catalogue_file import read_catalogue

    return read_catalogue(path)


def plugin_tree(source: str) -> PluginTree:
    """What is at one ``--plugin-dir``: its readable regular files (bytes and mode), the symlinks and
    the entries of other kinds inside it, found without following any link or opening a FIFO: the operator's
    tree, walked by name before the launch, while no child runs."""
    if os.path.islink(source) or not is_directory(source):
        return PluginTree(source=source, is_directory=is_directory(source), is_symlink=os.path.islink(source))
    files: list[PluginFile] = []
    links: list[str] = []
    special: list[str] = []
    for base, directories, names in os.walk(source, followlinks=False):
        for name in sorted(directories + names):
            path = os.path.join(base, name)
            relative = os.path.relpath(path, source)
            status = os.lstat(path)
            if stat.S_ISLNK(status.st_mode):
                links.append(relative)
            elif stat.S_ISREG(status.st_mode) and os.access(path, os.R_OK):
                try:
                    with open_regular(path) as handle:
                        files.append(PluginFile(relative, handle.read(), stat.S_IMODE(status.st_mode)))
                except OSError:
                    special.append(relative)
            elif not stat.S_ISDIR(status.st_mode) and not stat.S_ISREG(status.st_mode):
                special.append(relative)
    return PluginTree(
        source=source, is_directory=True, is_symlink=False, files=tuple(files), symlinks=tuple(links),
        special=tuple(special),
    )  # fmt: skip


def tree_checks(options: RunOptions) -> tuple[MemoryWalk, tuple[PluginCopy, ...]]:
    """Stage 7: the memory walk (from the temp directory the scratch root is created in for a scratch
    run, else above ``--cwd``; docs/hermetic.md#memory-file-walk) and the plugin directories
    (``plugin-dir-unusable``)."""
    walk = memory_walk_of(options.cwd, MEMORY_SHAPES[KIND])
    return walk, take(plan_plugins(tuple(plugin_tree(source) for source in options.plugin_dir)))


def gathered_inputs(options: RunOptions) -> Result[ClaudeInputs, Refusal]:
    """Stages 5–7 in claude's refusal order, a signal held since start-up checked where the run checks it; the
    first refusal, or what they gathered."""
    try:
        if options.tool_surface == "owned" and options.catalogue is None:
            raise Refused(NOT_BUILT)
        caller_env = caller_environment()
        caller_cwd = os.getcwd()
        custody = credentials_stage(options, caller_env)
        prepared = prepare(options, caller_env, custody)
        if isinstance(prepared, Refusal):
            raise Refused(prepared)
        check_held()
        context, catalogue, frame = declared_inputs(options)
        walk, plugins = tree_checks(options)
        check_held()
    except Refused as refused:
        return Failure(refused.refusal)
    return Success(ClaudeInputs(caller_env=caller_env, caller_cwd=caller_cwd, custody=custody, prepared=prepared,
                                context=context, catalogue=catalogue, frame=frame, walk=walk, plugins=plugins))  # fmt: skip
