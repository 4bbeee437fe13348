"""The doorbell's keys that name no request: each one a ``COVERAGE_GAP`` up to ``UNREAD_KEY_LIMIT``, then
one ``DOORBELL_FLOODED``, then none (docs/adapters/common.md#child-trees)."""

from __future__ import annotations

import msgspec

from metaharness.pure.bounds import UNREAD_KEY_LIMIT
from metaharness.pure.events import WarningRaised


class UnreadKeys(msgspec.Struct, frozen=True):
    """How many rung keys had no request file so far."""

    count: int = 0


def unread_key(keys: UnreadKeys, gap: WarningRaised) -> tuple[UnreadKeys, WarningRaised | None]:
    """One more key with no request: its ``gap`` warning while at most ``UNREAD_KEY_LIMIT`` came, the one
    ``DOORBELL_FLOODED`` after them, then nothing."""
    count = keys.count + 1
    if count <= UNREAD_KEY_LIMIT:
        return UnreadKeys(count), gap
    if count > UNREAD_KEY_LIMIT + 1:
        return UnreadKeys(count), None
    flooded = WarningRaised(
        code="DOORBELL_FLOODED",
        message=f"the doorbell rang more than {UNREAD_KEY_LIMIT} keys that name no request file; a hook writes its "
        "request before it rings, so something else is ringing it, and the keys after these go unreported",
    )
    return UnreadKeys(count), flooded
