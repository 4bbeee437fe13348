"""``run --timeout DURATION`` read as seconds (docs/cli.md "Ending a run"); a leaf, so the CLI parses the
option without importing the event model."""

from __future__ import annotations

import re

from returns.result import Failure, Result, Success

_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smh]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> Result[float, str]:
    """Seconds from ``600``, ``1.5``, ``90s``, ``10m`` or ``1h``; a duration must be above zero."""
    matched = _DURATION.fullmatch(text.strip())
    if matched is None:
        return Failure(f"{text!r} is not a duration: seconds (600) or a number with s, m or h (10m, 1h)")
    seconds = float(matched.group(1)) * _UNIT_SECONDS[matched.group(2)]
    if seconds <= 0:
        return Failure(f"{text!r} is not a duration above zero")
    return Success(seconds)
