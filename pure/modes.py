"""The run's two modes as types (docs/decisions.md#modes, docs/hermetic.md): how calls are
decided and how hermetic the run is asked to be.

A leaf, so a kind's record reader can name a mode without importing the option checks."""

from __future__ import annotations

from typing import Literal

DecisionMode = Literal["frame", "ask", "observe"]
HermeticMode = Literal["off", "on", "strict"]
Credentials = Literal["operator-login", "api-key", "loopback", "none"]
HERMETIC_MODES: tuple[HermeticMode, ...] = ("off", "on", "strict")
