"""``metaharness doctor <KIND>``: the binary the spawn would run, its pin and its flags (spec 10 §7)."""

from __future__ import annotations

from metaharness.pure.adapters import Kind
from metaharness.shell.adapters import live_adapter_of


def run_doctor(kind: Kind) -> int:
    """Resolve, probe and flag-check ``kind``'s binary; the exit of spec 10 §7."""
    return live_adapter_of(kind).doctor()
