"""What every vendor launch settles first, in this order (docs/hermetic.md#refusal-order stages 5 and 7): the
declared credential's posture, the child's directory, the memory walk and row H11 from it; the user turn; and how a
built argv is searched for a flag the kind denies (``denied-argument``, stage 8).

A kind's planner (``pure/<kind>/launch.py``) passes its own name and values; nothing here looks a kind up.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping
from typing import Protocol

import msgspec
from returns.result import Result

from metaharness.pure.context import ContextFileRead, render_context_block
from metaharness.pure.environment import CredentialPosture, EnvironmentDeclaration, credential_posture
from metaharness.pure.execution_context import execution_context_block, workspace_word
from metaharness.pure.hermetic import MemoryWalk, RowAttestation, RunShape, memory_row, workdir_mode
from metaharness.pure.kind import Kind
from metaharness.pure.refusal import Refusal


class VendorSpec(RunShape, Protocol):
    """What :func:`vendor_basis` reads of a vendor kind's run spec beside its modes and directory."""

    @property
    def environment(self) -> EnvironmentDeclaration: ...


class TurnSpec(RunShape, Protocol):
    """What :func:`vendor_user_turn` reads of a run spec beside its modes and directory: the task."""

    @property
    def prompt(self) -> str: ...


class Custody(msgspec.Struct, frozen=True):
    """Where the credential comes from: whether the caller's login file is readable, and under loopback the
    custody file the proxy reads and the upstream it sends the credential to."""

    credential_file_present: bool = False
    custody_path: str | None = None
    upstream: str | None = None


class VendorBasis(msgspec.Struct, frozen=True):
    """The settled start of a vendor launch: the declaration (its kind set), the credential posture, the child's
    directory (``--cwd`` or ``<scratch>/work``), the memory walk (none found when the shell ran none) and row H11."""

    declaration: EnvironmentDeclaration
    posture: CredentialPosture
    cwd: str
    walk: MemoryWalk
    memory: RowAttestation


def vendor_basis(
    kind: Kind,
    spec: VendorSpec,
    caller_env: Mapping[str, str],
    scratch: str,
    custody: Custody,
    walk: MemoryWalk | None,
    loaded_shapes: frozenset[str] | None = None,
) -> Result[VendorBasis, Refusal]:
    """The stage-5 credential refusals, then ``memory-ancestor-found``; else the basis (``loaded_shapes``: claude's
    memory canary, ``metaharness.pure.hermetic.memory_row``)."""
    declaration = msgspec.structs.replace(spec.environment, kind=kind)
    cwd = spec.cwd if spec.cwd is not None else posixpath.join(scratch, "work")
    walked = walk if walk is not None else MemoryWalk(start=posixpath.dirname(scratch), hits=(), root_names=())
    return Result.do(
        VendorBasis(declaration, posture, cwd, walked, memory)
        for posture in credential_posture(
            declaration, caller_env, custody.credential_file_present, custody.custody_path, custody.upstream
        )
        for memory in memory_row(kind, workdir_mode(spec.cwd, spec.scratch_cwd), walked, loaded_shapes)
    )


def vendor_user_turn(kind: Kind, spec: TurnSpec, context: tuple[ContextFileRead, ...]) -> str:
    """The execution-context block, a blank line, the rendered ``context`` files and a blank line when any is
    given, then the task unchanged (docs/adapters/common.md#vendor-launch-order, docs/hermetic.md#context-rendering;
    claude renders its context files into its system prompt instead, and gives none here)."""
    block = execution_context_block(kind, workspace_word(spec.cwd, spec.scratch_cwd), spec.hermetic, spec.decisions)
    rendered = f"{render_context_block(context)}\n" if context else ""
    return f"{block}\n{rendered}{spec.prompt}"


def scratch_directories(scratch: str, cwd: str | None, names: list[str]) -> tuple[str, ...]:
    """The scratch directories a launch creates (0700), parents first: ``work`` first when the run names no
    ``--cwd``, then the kind's ``names``, each under ``scratch``."""
    return tuple(posixpath.join(scratch, name) for name in (["work"] if cwd is None else []) + names)


def denied_flag(
    args: tuple[str, ...], denied: Collection[str], valued: Collection[str], until: str | None = None
) -> str | None:
    """The first flag of ``args`` in ``denied``, compared by its part before ``=``, stepping over the value of
    each flag in ``valued`` and stopping at ``until`` (codex's ``--``); ``None`` when there is none."""
    index = 0
    while index < len(args) and args[index] != until:
        flag = args[index].split("=", 1)[0]
        if flag in denied:
            return flag
        index += 2 if args[index] in valued else 1
    return None
