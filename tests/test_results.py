"""``each``: a sequence read in order, the first failure its result and nothing after it read."""

from __future__ import annotations

from returns.result import Failure, Result, Success

from metaharness.pure.results import each


def test_every_value_read_in_order() -> None:
    assert each([3, 1, 2], lambda n: Success(n * 10)) == Success((30, 10, 20))
    assert each([], lambda n: Success(n)) == Success(())


def test_the_first_failure_is_the_result_and_later_values_are_not_read() -> None:
    read: list[int] = []

    def positive(n: int) -> Result[int, str]:
        read.append(n)
        return Success(n) if n > 0 else Failure(f"{n} is not positive")

    assert each([1, -2, -3, 4], positive) == Failure("-2 is not positive")
    assert read == [1, -2]
