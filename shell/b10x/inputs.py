"""Stages 5–7 of ``metaharness run b10x`` (docs/hermetic.md#refusal-order): the credential, the view's refusals,
the declared inputs and the tree checks, decided before the kind's run module is imported, so a refusal there
starts no more of metaharness than deciding it needs (docs/DEVELOPING.md#the-run-engine).

They read only (the caller's environment, its files, the bwrap trial); what they gathered is handed on as one
:class:`B10xInputs` to ``metaharness.shell.b10x.run``.
"""

from __future__ import annotations

import os
import stat

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.b10x.admissibility import check_frame_admissible
from metaharness.pure.b10x.launch import environment_declaration, workspace_of
from metaharness.pure.context import ContextFileRead
from metaharness.pure.environment import credential_posture
from metaharness.pure.frames import Frame, refuse_frame_beside_observe
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal
from metaharness.shell.confinement import Prepared, prepare
from metaharness.shell.context_files import load_context_files
from metaharness.shell.facts import caller_environment
from metaharness.shell.frame_file import read_frame_file
from metaharness.shell.staging import Refused, check_held, is_directory, take, unusable_directory
from metaharness.shell.tree_facts import special_entry_refusal


class B10xInputs(msgspec.Struct, frozen=True, kw_only=True):
    """What stages 5–7 of a b10x run gathered: the caller's environment and directory, the view's settled facts
    (``None`` unconfined), the ``--context`` files and the admissible frame."""

    caller_env: dict[str, str]
    caller_cwd: str
    prepared: Prepared | None
    context: tuple[ContextFileRead, ...]
    frame: Frame | None


def _readable_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode) and os.access(path, os.R_OK)
    except OSError:
        return False


def declared_inputs(options: RunOptions, caller_cwd: str) -> tuple[tuple[ContextFileRead, ...], Frame | None]:
    """Stage 6 (docs/hermetic.md#refusal-order): ``cwd-unusable``, ``retain-dir-unusable``,
    ``substrate-embedded-workspace``, the ``--context`` refusals, the frame's refusals, ``observe-with-frame``,
    ``frame-inadmissible``."""
    unusable = unusable_directory(options)
    if unusable is not None:
        raise Refused(unusable)
    if options.substrate_embedded:
        workspace = workspace_of(options, caller_cwd, "/scratch")
        if not os.path.basename(workspace).startswith("ws_"):
            raise Refused(
                Refusal(
                    "substrate-embedded-workspace",
                    f"--substrate-embedded needs a workspace whose name begins ws_, and {workspace} does not",
                )
            )
    context = take(load_context_files(options.cwd, options.context)) if options.context else ()
    frame: Frame | None = None
    if options.frame is not None:
        frame = take(read_frame_file(options.frame))
    take(refuse_frame_beside_observe(options.decisions, options.frame))
    if frame is not None:
        frame = take(check_frame_admissible(frame))
    return context, frame


def tree_checks(options: RunOptions) -> None:
    """Stage 7 (docs/hermetic.md#refusal-order): ``plugin-dir-unusable``, then ``input-unreadable`` for ``--hooks``,
    ``--prices``, ``--driver`` and ``--subscription-token-file``."""
    for directory in options.plugin_dir:
        if not is_directory(directory):
            raise Refused(Refusal("plugin-dir-unusable", f"--plugin-dir {directory} is missing or not a directory"))
    special = special_entry_refusal(options.plugin_dir)
    if special is not None:
        raise Refused(special)
    for name, value in (
        ("hooks", options.hooks),
        ("prices", options.prices),
        ("driver", options.driver),
        ("subscription-token-file", options.subscription_token_file),
    ):
        if value is not None and not _readable_file(value):
            raise Refused(Refusal("input-unreadable", f"--{name} {value} is not a readable regular file"))


def gathered_inputs(options: RunOptions) -> Result[B10xInputs, Refusal]:
    """Stages 5–7 in b10x's refusal order, a signal held since start-up checked where the run checks it; the first
    refusal, or what they gathered."""
    try:
        caller_env = caller_environment()
        caller_cwd = os.getcwd()
        take(
            credential_posture(environment_declaration(options, caller_cwd), caller_env, credential_file_present=False)
        )
        prepared = prepare(options, caller_env, None)
        if isinstance(prepared, Refusal):
            raise Refused(prepared)
        check_held()
        context, frame = declared_inputs(options, caller_cwd)
        tree_checks(options)
    except Refused as refused:
        return Failure(refused.refusal)
    return Success(B10xInputs(caller_env=caller_env, caller_cwd=caller_cwd, prepared=prepared, context=context,
                              frame=frame))  # fmt: skip
