"""``doctor gemini``: the binary the spawn would run, its version against the pin, and every flag the launch
emits checked against ``gemini --help`` (docs/adapters/common.md#doctor, docs/adapters/gemini.md#doctor)."""

from __future__ import annotations

import posixpath
import re

import msgspec

from metaharness.pure.gemini.adapter import KIND, PINS

SENT_FLAGS = ("-p", "--model", "--output-format", "--skip-trust", "--approval-mode")
"""Every flag the launch of docs/adapters/gemini.md#launch emits, in argv order."""

_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9-]*|-[A-Za-z])(?![\w-])")


class DoctorReport(msgspec.Struct, frozen=True):
    """The lines ``doctor gemini`` prints and its exit code (0 on the pin without a fault, else 1)."""

    lines: tuple[str, ...]
    exit_code: int


def version_token(banner: str) -> str | None:
    """The first whitespace-separated token starting with a digit (``0.61.0``)."""
    return next((word for word in banner.split() if word[:1].isdigit()), None)


def doctor_report(program: str, version: str, help_text: str) -> DoctorReport:
    """The version line and the flag lines for ``program`` reporting ``version``."""
    pins = ", ".join(PINS)
    if version in PINS:
        first = f"{KIND}: {program} {version} — on the adapter's pin ({pins})"
    else:
        first = (f"{KIND}: {program} {version} — OFF the adapter's pin ({pins}). A run is unverified rather than "
                 "refused; --strict-version refuses it.")  # fmt: skip
    name = posixpath.basename(program)
    declared = frozenset(_FLAG.findall(help_text))
    faults = tuple(f"{name}: the adapter sends {flag} and the binary does not declare it"
                   for flag in SENT_FLAGS if flag not in declared)  # fmt: skip
    lines = (first, *faults) if faults else (first, f"{name}: every flag the adapter sends is one the binary declares")
    return DoctorReport(lines, 0 if version in PINS and not faults else 1)
