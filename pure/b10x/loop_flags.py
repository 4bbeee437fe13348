"""The loop flags a run may pass that a loop can declare without building (docs/loop-extensions.md):
read from the loop's ``run --help`` beside the version probe, so a run that would hand the loop a
flag it refuses at start is refused by metaharness before the spawn (``not-built``)."""

from __future__ import annotations

import posixpath

from metaharness.pure.doctor import declared_flags
from metaharness.pure.loop.plan import NOT_BUILT_HEADING
from metaharness.pure.options import RunOptions
from metaharness.pure.refusal import Refusal

TIER_FLAGS: tuple[tuple[str, str], ...] = (
    ("hooks", "--hooks"),
    ("toolchain", "--toolchain"),
    ("driver", "--driver"),
    ("substrate", "--substrate"),
    ("substrate_embedded", "--substrate-embedded"),
    ("cgroup_root", "--cgroup-root"),
    ("plugin_dir", "--plugin-dir"),
)
"""The run options that travel as loop flags a loop may declare and not build, in launch order."""


def tier_flags(options: RunOptions) -> tuple[str, ...]:
    """The loop flags ``options`` will pass among :data:`TIER_FLAGS`."""
    return tuple(flag for name, flag in TIER_FLAGS if getattr(options, name) not in (None, (), False))


def not_built_flags(help_text: str) -> frozenset[str]:
    """The flags the help's ``Declared but not built in this implementation:`` line names."""
    lines = (line.strip() for line in help_text.splitlines())
    return frozenset(
        flag for line in lines if line.startswith(NOT_BUILT_HEADING) for flag in declared_flags(line)
    )


def loop_flag_refusal(flags: tuple[str, ...], program: str, version: str | None, help_text: str | None) -> Refusal | None:
    """``not-built`` for the first of ``flags`` the loop at ``program`` does not build (or declare),
    naming the loop's version; ``None`` when it builds them all."""
    if not flags:
        return None
    loop = f"{posixpath.basename(program)} {version or '(version unreadable)'} at {program}"
    if help_text is None:
        return Refusal(
            "not-built",
            f"{flags[0]} is not built in this build: {loop} gave no `run --help`, so whether it builds "
            f"{flags[0]} cannot be read",
        )
    declared = declared_flags(help_text)
    unbuilt = not_built_flags(help_text)
    for flag in flags:
        if flag in unbuilt:
            return Refusal(
                "not-built",
                f"{flag} is not built in this build: {loop} declares {flag} but does not build it, "
                "so the loop would refuse the run at start",
            )
        if flag not in declared:
            return Refusal("not-built", f"{flag} is not built in this build: {loop} does not declare {flag}")
    return None
