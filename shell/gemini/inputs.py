"""Stages 5–6 of ``metaharness run gemini`` (docs/hermetic.md#refusal-order): the loopback custody, the view's
refusals and the declared inputs, decided before the kind's run module is imported, so a refusal there starts no
more of metaharness than deciding it needs (docs/DEVELOPING.md#the-run-engine). The credential's own refusals come
with the plan (``metaharness.shell.gemini.run``), as before.

They read only (the caller's environment, its files, the bwrap trial); what they gathered is handed on as one
:class:`GeminiInputs`.
"""

from __future__ import annotations

import os

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.bounds import CREDENTIAL_FILE_LIMIT
from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import loopback_custody_token, operator_login_file
from metaharness.pure.frames import Frame, refuse_frame_beside_observe
from metaharness.pure.gemini.adapter import KIND
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.shell.bounded_reads import read_regular
from metaharness.shell.confinement import Prepared, prepare
from metaharness.shell.context_files import load_context_files
from metaharness.shell.facts import caller_environment
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.staging import Refused, check_held, take, unusable_directory


class GeminiInputs(msgspec.Struct, frozen=True, kw_only=True):
    """What stages 5–6 of a gemini run gathered: the custody ``.env`` under loopback, the view's settled facts
    (``None`` unconfined), the ``--context`` files and the frame."""

    custody: str | None
    prepared: Prepared | None
    context: tuple[ContextFileRead, ...]
    frame: Frame | None


def custody_stage(options: RunOptions) -> str | None:
    """Stage 5 under loopback: the custody ``~/.gemini/.env`` is parsed once (``loopback-custody-unreadable``);
    its path, or ``None`` off loopback."""
    if options.credentials != "loopback":
        return None
    path = operator_login_file(KIND, caller_environment()) or ""
    try:
        data = read_regular(path, CREDENTIAL_FILE_LIMIT)
    except OSError as error:
        raise Refused(Refusal("loopback-custody-unreadable", f"{path}: {error.strerror or error}")) from None
    take(loopback_custody_token(KIND, data))
    return path


def declared_inputs(options: RunOptions) -> tuple[tuple[ContextFileRead, ...], Frame | None]:
    """Stage 6: ``cwd-unusable``, ``retain-dir-unusable``, the ``--context`` refusals, the frame's refusals and
    ``observe-with-frame``."""
    unusable = unusable_directory(options)
    if unusable is not None:
        raise Refused(unusable)
    cwd = os.path.abspath(options.cwd) if options.cwd is not None else None
    context = take(load_context_files(cwd, options.context)) if options.context else ()
    frame = take(read_frame_file(options.frame)) if options.frame is not None else None
    take(refuse_frame_beside_observe(options.decisions, options.frame))
    return context, frame


def gathered_inputs(options: RunOptions) -> Result[GeminiInputs, Refusal]:
    """Stages 5–6 in gemini's refusal order, a signal held since start-up checked where the run checks it; the
    first refusal, or what they gathered."""
    try:
        custody = custody_stage(options)
        prepared = prepare(options, caller_environment(), custody)
        if isinstance(prepared, Refusal):
            raise Refused(prepared)
        context, frame = declared_inputs(options)
        check_held()
    except Refused as refused:
        return Failure(refused.refusal)
    return Success(GeminiInputs(custody=custody, prepared=prepared, context=context, frame=frame))
