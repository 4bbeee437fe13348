"""A per-call memory bounded in the record's length (docs/events.md#replay): a persistent map in two
generations of ``CALL_MEMORY_LIMIT`` keys. Writes go to the recent generation; when it is full it becomes
the older one and the older one is forgotten, except the keys still open, which are carried into the new
recent generation. A lookup sees the recent generation first."""

from __future__ import annotations

from collections.abc import Collection
from typing import Generic, TypeVar, overload

from immutables import Map
from msgspec import Struct

from metaharness.pure.bounds import CALL_MEMORY_LIMIT

V = TypeVar("V")
_ABSENT = object()


class CallMemory(Struct, Generic[V], frozen=True):
    """What a reader remembers per call id, at most twice ``limit`` keys plus the open ones."""

    recent: Map[str, V] = Map()
    older: Map[str, V] = Map()
    limit: int = CALL_MEMORY_LIMIT

    @overload
    def get(self, call_id: str) -> V | None: ...
    @overload
    def get(self, call_id: str, default: V) -> V: ...
    def get(self, call_id: str, default: V | None = None) -> V | None:
        """The value remembered for ``call_id``, else ``default``."""
        found = self.recent.get(call_id, _ABSENT)
        if found is not _ABSENT:
            return found  # type: ignore[return-value]
        return self.older.get(call_id, default)

    def __contains__(self, call_id: object) -> bool:
        return call_id in self.recent or call_id in self.older

    def __getitem__(self, call_id: str) -> V:
        found = self.recent.get(call_id, _ABSENT)
        return found if found is not _ABSENT else self.older[call_id]  # type: ignore[return-value]

    def keys(self) -> set[str]:
        """Every call id remembered."""
        return {*self.recent.keys(), *self.older.keys()}

    def __len__(self) -> int:
        """The keys held (a key in both generations counts twice)."""
        return len(self.recent) + len(self.older)

    def set(self, call_id: str, value: V, open_ids: Collection[str] = ()) -> CallMemory[V]:
        """This memory with ``call_id`` remembering ``value``; a full recent generation turns older, and the
        forgotten generation's ``open_ids`` are carried over."""
        recent = self.recent.set(call_id, value)
        if len(recent) < self.limit:
            return CallMemory(recent, self.older, self.limit)
        carried = Map({key: self.older[key] for key in open_ids if key in self.older and key not in recent})
        return CallMemory(carried, recent, self.limit)
