"""Every refusal code and warning code the package can write is named on a page of ``docs/``, so a
maintainer who meets one in a stderr line or an event stream can look it up."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFUSAL = re.compile(r'Refusal\(\s*(?:code=)?"([a-z][a-z0-9-]+)"')
WARNING = re.compile(r'\bcode="([A-Za-z][A-Za-z_-]+)"')


def source() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for folder in ("pure", "shell") for path in (ROOT / folder).rglob("*.py"))


def documented() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "docs").rglob("*.md"))


def undocumented(pattern: re.Pattern[str]) -> list[str]:
    pages = documented()
    return sorted({code for code in pattern.findall(source()) if f"`{code}`" not in pages})


def test_every_refusal_code_is_documented() -> None:
    assert len(REFUSAL.findall(source())) > 50
    assert undocumented(REFUSAL) == []


def test_every_warning_code_is_documented() -> None:
    assert {"NO_TERMINAL_RECORD", "LOOPBACK_REFUSED"} <= set(WARNING.findall(source()))
    assert undocumented(WARNING) == []
