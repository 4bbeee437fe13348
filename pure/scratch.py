"""A file a vendor launch writes into its scratch tree (docs/adapters/claude.md;
docs/adapters/codex.md#scratch-layout)."""

from __future__ import annotations

import msgspec

from metaharness.pure.jsonline import sha256_hex


class ScratchFile(msgspec.Struct, frozen=True):
    """A file the launch writes into the scratch tree with its mode (docs/adapters/claude.md;
    docs/adapters/codex.md)."""

    path: str
    data: bytes
    mode: int = 0o600

    @property
    def sha256(self) -> str:
        return sha256_hex(self.data)
