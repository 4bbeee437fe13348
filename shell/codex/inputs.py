"""Stages 5–6 of ``metaharness run codex`` (docs/hermetic.md#refusal-order): the credential or the loopback custody,
the view's refusals and, on a catalogue run, the directories, the context files and the catalogue file, decided
before the kind's run module is imported, so a refusal there starts no more of metaharness than deciding it needs
(docs/DEVELOPING.md#the-run-engine). The rest of stage 6 (the frame) and stage 7 are checked again with each plan
(``metaharness.shell.codex.run.plan_run``); they are checked here once first, ahead of that import.

They read only (the caller's environment, its files, the bwrap trial); what they gathered is handed on as one
:class:`CodexInputs`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import CREDENTIAL_FILE_LIMIT
from metaharness.pure.codex.vendor import KIND
from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import (
    EnvironmentDeclaration,
    credential_posture,
    custody_missing,
    loopback_custody_token,
    operator_login_file,
)
from metaharness.pure.frames import Frame, refuse_frame_beside_observe
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import read_regular
from metaharness.shell.confinement import Prepared, prepare
from metaharness.shell.context_files import load_context_files
from metaharness.shell.facts import caller_environment, readable_regular_file
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.staging import unusable_directory

if TYPE_CHECKING:
    from metaharness.pure.catalogue import Catalogue


class CodexInputs(msgspec.Struct, frozen=True, kw_only=True):
    """What stages 5–6 of a codex run gathered: the custody ``auth.json`` under loopback, the view's settled facts
    (``None`` unconfined) and the checked catalogue of a catalogue run."""

    custody: str | None
    prepared: Prepared | None
    catalogue: Catalogue | None


def custody_stage(options: RunOptions, caller_env: dict[str, str]) -> Result[str | None, Refusal]:
    """Stage 5 (docs/hermetic.md#refusal-order): off loopback the declared credential's refusals, before any declared
    input is read, and ``None``; under loopback (docs/adapters/common.md#endpoint-route) the custody ``auth.json``
    parsed once (``loopback-custody-unreadable``, ``loopback-chatgpt-login``) and its path."""
    if options.credentials != "loopback":
        declaration = EnvironmentDeclaration(kind=KIND, credentials=options.credentials)
        present = readable_regular_file(operator_login_file(KIND, caller_env))
        return credential_posture(declaration, caller_env, present).map(lambda _: None)
    custody = operator_login_file(KIND, caller_env)
    try:
        data = read_regular(custody or "", CREDENTIAL_FILE_LIMIT)
    except OSError as error:
        return Failure(custody_missing(KIND, custody, str(error.strerror or error)))
    return loopback_custody_token(KIND, data).map(lambda _: custody)


def declared_inputs(
    options: RunOptions,
) -> Result[tuple[str | None, tuple[ContextFileRead, ...], Frame | None], Refusal]:
    """Stage 6 without the catalogue: ``cwd-unusable``, ``retain-dir-unusable``, the
    ``--context`` refusals, then the frame and ``observe-with-frame``; :func:`gathered_inputs` reads the
    catalogue between the context files and the frame, as claude and b10x do."""
    cwd = os.path.abspath(options.cwd) if options.cwd is not None else None
    unusable = unusable_directory(options)
    if unusable is not None:
        return Failure(unusable)
    context = load_context_files(cwd, options.context)
    if isinstance(context, Failure):
        return context
    frame: Frame | None = None
    if options.frame is not None:
        loaded = read_frame_file(options.frame)
        if isinstance(loaded, Failure):
            return loaded
        frame = loaded.unwrap()
    beside = refuse_frame_beside_observe(options.decisions, options.frame)
    if isinstance(beside, Failure):
        return beside
    return Success((cwd, context.unwrap(), frame))


def read_codex_catalogue(path: str) -> Result[Catalogue, Refusal]:
    """Stage 6 on codex: the catalogue file's refusals (docs/hermetic.md#catalogue-refusals), then
    ``catalogue-name-reserved`` for an entry app-server would refuse at ``thread/start``. The catalogue's modules are
    imported here, so a run without ``--catalogue`` refused before its plan loads none of them."""
    from metaharness.pure.catalogue import check_codex_names
    from metaharness.shell.catalogue_file import read_catalogue

    return read_catalogue(path).bind(lambda catalogue: check_codex_names(catalogue, path))


def _catalogue_stage(options: RunOptions) -> Result[Catalogue | None, Refusal]:
    """The stage-6 checks that come before the catalogue file's (the directories and the context files), then the
    catalogue file's; ``None`` without ``--catalogue``."""
    if options.catalogue is None:
        return Success(None)
    unusable = unusable_directory(options)
    if unusable is not None:
        return Failure(unusable)
    cwd = os.path.abspath(options.cwd) if options.cwd is not None else None
    path = options.catalogue
    return load_context_files(cwd, options.context).bind(lambda _: read_codex_catalogue(path))


def gathered_inputs(options: RunOptions) -> Result[CodexInputs, Refusal]:
    """Stages 5–6 in codex's refusal order (the credential, the view, the catalogue, the frame); the first refusal, or
    what they gathered. A signal held meanwhile is the run's to refuse after its plan, as before."""
    caller_env = caller_environment()
    custody = custody_stage(options, caller_env)
    if isinstance(custody, Failure):
        return custody
    path = custody.unwrap()
    prepared = prepare(options, caller_env, path)
    if isinstance(prepared, Refusal):
        return Failure(prepared)
    catalogue = _catalogue_stage(options)
    if isinstance(catalogue, Failure):
        return catalogue
    declared = declared_inputs(options)
    if isinstance(declared, Failure):
        return declared
    return Success(CodexInputs(custody=path, prepared=prepared, catalogue=catalogue.unwrap()))
