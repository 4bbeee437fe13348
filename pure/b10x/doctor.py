"""``doctor b10x``: the binary the spawn would run, its version against the pin, its flags
(docs/adapters/b10x.md#capabilities-and-doctor, docs/adapters/common.md#doctor)."""

from __future__ import annotations

import posixpath

from metaharness.pure.b10x.loop_flags import not_built_flags
from metaharness.pure.b10x.vendor import PIN
from metaharness.pure.doctor import DoctorReport, declared_flags

SENT_FLAGS = (
    "--execution-path",
    "--json",
    "--approve-up-to",
    "--approve",
    "--no-session",
    "--workspace",
    "--base-url",
    "--model",
    "--wire",
    "--api-key-env",
    "--api-key-secret",
    "--oauth-token-file",
    "--oauth-token-env",
    "--oauth-token-pointer",
    "--hooks",
    "--toolchain",
    "--driver",
    "--write-scope",
    "--scope-announce",
    "--prices",
    "--substrate",
    "--substrate-embedded",
    "--cgroup-root",
    "--allow-program",
    "--max-turns",
    "--plugin-dir",
    "--context",
    "--input",
)
"""Every flag the launch of docs/adapters/b10x.md#argv can emit, in the order
docs/adapters/b10x.md#capabilities-and-doctor checks them."""

def doctor_report(program: str, version: str, help_text: str, own_version: str | None = None) -> DoctorReport:
    """The version line and the flag lines for ``program`` reporting ``version`` (a readable token); ``own_version``
    is this distribution's version when ``program`` is its own loop (docs/adapters/b10x.md#program-and-version)."""
    verified = version == PIN or version == own_version
    if version == PIN:
        first = f"b10x: {program} {version} — on the adapter's pin ({PIN})"
    elif verified:
        first = (
            f"b10x: {program} {version} — this distribution's own loop, verified at its own version by its own "
            f"vectors (the adapter's pin is {PIN})"
        )
    else:
        first = (
            f"b10x: {program} {version} — OFF the adapter's pin ({PIN}). A run is unverified rather than "
            "refused; --strict-version refuses it."
        )
    name = posixpath.basename(program)
    declared = declared_flags(help_text)
    faults = tuple(
        f"{name}: the adapter sends {flag} and the binary does not declare it" for flag in SENT_FLAGS if flag not in declared
    )
    lines = (first, *faults) if faults else (first, f"{name}: every flag the adapter sends is one the binary declares")
    unbuilt = not_built_flags(help_text)
    declared_only = tuple(
        f"{name}: the binary declares {flag} but does not build it; a run that would send it is refused before "
        "the spawn"
        for flag in SENT_FLAGS
        if flag in unbuilt
    )
    return DoctorReport((*lines, *declared_only), 0 if verified and not faults else 1)

