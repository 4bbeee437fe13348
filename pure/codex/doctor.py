"""``doctor codex``: the binary the spawn would run, its version against the pin, and every flag the
launches emit checked against ``codex exec --help`` and ``codex app-server --help`` (docs/adapters/common.md#pins,
docs/adapters/common.md#doctor)."""

from __future__ import annotations

import posixpath

from metaharness.pure.codex.app_server import app_server_args
from metaharness.pure.codex.vendor import PINS
from metaharness.pure.doctor import DoctorReport, declared_flags

SENT_FLAGS = (
    "--json",
    "--strict-config",
    "--dangerously-bypass-hook-trust",
    "--skip-git-repo-check",
    "--color",
    "--model",
)
"""Every flag the ``codex exec`` launch of docs/adapters/codex.md can emit, in argv order."""

APP_SERVER_FLAGS = tuple(
    arg for arg in app_server_args()[app_server_args().index("app-server") + 1 :] if arg[:2] == "--"
)
"""The flags a catalogue run passes after ``app-server`` (docs/adapters/codex.md), in argv order."""


def version_token(banner: str) -> str | None:
    """The first whitespace-separated token starting with a digit (``codex-cli 0.171.0`` → ``0.171.0``)."""
    return next((word for word in banner.split() if word[:1].isdigit()), None)


def codex_doctor_report(program: str, version: str, exec_help: str, app_server_help: str) -> DoctorReport:
    """The version line, then one line per flag fault (the exec flags, then the app-server flags) or
    the all-declared line; exit 0 on the pin without a fault, else 1."""
    pins = ", ".join(PINS)
    on_pin = version in PINS
    first = (
        f"codex: {program} {version} — on the adapter's pin ({pins})"
        if on_pin
        else f"codex: {program} {version} — OFF the adapter's pin ({pins}). A run is unverified rather than refused; "
        "--strict-version refuses it."
    )
    name = posixpath.basename(program)
    declared = declared_flags(exec_help)
    served = declared_flags(app_server_help)
    faults = (
        *(
            f"{name}: the adapter sends {flag} and the binary does not declare it"
            for flag in SENT_FLAGS
            if flag not in declared
        ),
        *(
            f"{name}: the adapter sends app-server {flag} and the binary does not declare it"
            for flag in APP_SERVER_FLAGS
            if flag not in served
        ),
    )
    lines = (first, *faults) if faults else (first, f"{name}: every flag the adapter sends is one the binary declares")
    return DoctorReport(lines, 0 if on_pin and not faults else 1)
