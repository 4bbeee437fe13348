"""``doctor claude``: the binary the spawn would run, its version against the pin, and every flag the
launch can emit checked against ``claude --help`` — ``--max-turns``, which the pin hides from its
help, by acceptance (docs/adapters/common.md#pins, docs/adapters/common.md#doctor)."""

from __future__ import annotations

import posixpath
import re

import msgspec

from metaharness.pure.claude.vendor import PINS

SENT_FLAGS = (
    "-p",
    "--output-format",
    "--verbose",
    "--input-format",
    "--permission-prompts",
    "--replay-user-messages",
    "--strict-mcp-config",
    "--setting-sources",
    "--settings",
    "--append-system-prompt",
    "--model",
    "--effort",
    "--plugin-dir",
    "--tools",
    "--mcp-config",
)
"""Every flag the launch of docs/adapters/claude.md can emit and ``claude --help`` declares, in argv order."""

HIDDEN_FLAGS = ("--max-turns", "--await-initialize")
"""Flags the pin accepts but hides from ``--help``: checked by acceptance (docs/adapters/common.md#pins)."""

VALUELESS = frozenset({"--await-initialize"})
"""Hidden flags that take no value: probed after ``-p`` (the pin reports an unknown option on stderr there)."""

PROBE_FLAG = "--metaharness-acceptance-probe"
"""An option no Claude Code declares: the parser names the first option it does not know, so a probe
``<flag> 1 PROBE_FLAG`` that is refused naming the probe shows ``<flag>`` was accepted."""

_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9-]*|-[A-Za-z])(?![\w-])")


class DoctorReport(msgspec.Struct, frozen=True):
    """The lines ``doctor claude`` prints and its exit code (0 on the pin without a fault, else 1)."""

    lines: tuple[str, ...]
    exit_code: int


def declared_flags(help_text: str) -> frozenset[str]:
    """The ``--flag`` and ``-f`` tokens of a help text."""
    return frozenset(_FLAG.findall(help_text))


def version_token(banner: str) -> str | None:
    """The first whitespace-separated token starting with a digit (``2.1.332 (Claude Code)``,
    docs/adapters/common.md#pins)."""
    return next((word for word in banner.split() if word[:1].isdigit()), None)


def acceptance_probe(program: str, flag: str) -> tuple[str, ...]:
    """The argv that shows whether ``program`` accepts ``flag``: the flag with a value (``-p`` and the flag alone
    for a :data:`VALUELESS` one), then the probe."""
    return (program, "-p", flag, PROBE_FLAG) if flag in VALUELESS else (program, flag, "1", PROBE_FLAG)


def accepted(flag: str, probe_stderr: str) -> bool:
    """The probe was refused naming the probe option, not ``flag``, so ``flag`` was accepted."""
    return f"'{PROBE_FLAG}'" in probe_stderr and f"'{flag}'" not in probe_stderr


def doctor_report(program: str, version: str, help_text: str, hidden_accepted: dict[str, bool]) -> DoctorReport:
    """The version line and the flag lines for ``program`` reporting ``version`` (docs/adapters/common.md#doctor)."""
    pins = ", ".join(PINS)
    if version in PINS:
        first = f"claude: {program} {version} — on the adapter's pin ({pins})"
    else:
        first = (
            f"claude: {program} {version} — OFF the adapter's pin ({pins}). A run is unverified rather than refused; "
            "--strict-version refuses it."
        )
    name = posixpath.basename(program)
    declared = declared_flags(help_text)
    missing = [flag for flag in SENT_FLAGS if flag not in declared]
    missing += [flag for flag in HIDDEN_FLAGS if not hidden_accepted.get(flag, False)]
    faults = tuple(f"{name}: the adapter sends {flag} and the binary does not declare it" for flag in missing)
    lines = (first, *faults) if faults else (first, f"{name}: every flag the adapter sends is one the binary declares")
    return DoctorReport(lines, 0 if version in PINS and not faults else 1)
