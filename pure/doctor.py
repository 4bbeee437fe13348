"""What ``doctor <KIND>`` prints and how it reads a help text (docs/adapters/common.md#doctor), for every kind."""

from __future__ import annotations

import re

import msgspec

_FLAG = re.compile(r"--[A-Za-z0-9][A-Za-z0-9-]*")


class DoctorReport(msgspec.Struct, frozen=True):
    """The lines ``doctor <KIND>`` prints and its exit code (0 on the pin without a fault, else 1)."""

    lines: tuple[str, ...]
    exit_code: int


def declared_flags(help_text: str) -> frozenset[str]:
    """The ``--flag`` tokens of a help text."""
    return frozenset(_FLAG.findall(help_text))
