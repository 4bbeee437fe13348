"""Composing ``Result`` values: ``pure/`` refuses by returning a ``Failure``, never by raising.

A reader of several parts is written with ``Result.do`` (each ``for`` clause reads one part and the
first ``Failure`` is the result), a single next step with ``bind``/``map``/``alt``, and a reader of a
sequence with ``each``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from returns.result import Failure, Result, Success

_Value = TypeVar("_Value")
_Read = TypeVar("_Read")
_Error = TypeVar("_Error")


def each(
    values: Iterable[_Value], read: Callable[[_Value], Result[_Read, _Error]]
) -> Result[tuple[_Read, ...], _Error]:
    """``read`` over ``values`` in order: every value read, or the first failure (the values after it
    are not read)."""
    done: list[_Read] = []
    for value in values:
        match read(value):
            case Success(read_value):
                done.append(read_value)
            case Failure() as failed:
                return failed
    return Success(tuple(done))
