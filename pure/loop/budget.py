"""Stops, budgets and cost (docs/loop.md#the-record stop objects, docs/loop.md#the-turn-loop)."""

from __future__ import annotations

import math

import msgspec
from returns.result import Failure, Result, Success

from metaharness.pure.wires.neutral import ProviderStop, Usage

CANCELLED_REASON = "the caller cancelled"
UNREPORTED_USAGE = "the provider reported no usage"


class Stop(msgspec.Struct, frozen=True, tag_field="kind"):
    """Base of the stop objects of ``finished``."""


class Completed(Stop, frozen=True, tag="completed"):
    pass


class MaxTurns(Stop, frozen=True, tag="max-turns"):
    limit: int


class MaxOutputTokens(Stop, frozen=True, tag="max-output-tokens"):
    limit: int
    reported: int


class MaxCost(Stop, frozen=True, tag="max-cost"):
    limit_micro_usd: int
    spent_micro_usd: int


class Deadline(Stop, frozen=True, tag="deadline"):
    limit_ms: int


class Cancelled(Stop, frozen=True, tag="cancelled"):
    reason: str = CANCELLED_REASON


class ProviderIncomplete(Stop, frozen=True, tag="provider-incomplete"):
    reason: str


class BudgetUnobservable(Stop, frozen=True, tag="budget-unobservable"):
    name: str
    reason: str = UNREPORTED_USAGE


StopObject = (
    Completed | MaxTurns | MaxOutputTokens | MaxCost | Deadline | Cancelled | ProviderIncomplete | BudgetUnobservable
)


class Limits(msgspec.Struct, frozen=True):
    """The run's budgets; ``None`` when not set."""

    max_turns: int | None = None
    max_output_tokens: int | None = None
    max_duration_ms: int | None = None
    max_cost_micro_usd: int | None = None


class Spent(msgspec.Struct, frozen=True):
    """What the run has used so far."""

    turns: int = 0
    output_tokens: int = 0
    micro_usd: int = 0


def stop_before_turn(limits: Limits, spent: Spent, cancelled: bool, elapsed_ms: int) -> StopObject | None:
    """Cancelled, then deadline, then the turn ceiling (docs/loop.md#the-turn-loop)."""
    if cancelled:
        return Cancelled()
    if limits.max_duration_ms is not None and elapsed_ms >= limits.max_duration_ms:
        return Deadline(limits.max_duration_ms)
    if limits.max_turns is not None and spent.turns >= limits.max_turns:
        return MaxTurns(limits.max_turns)
    return None


def stop_between_calls(limits: Limits, cancelled: bool, elapsed_ms: int) -> StopObject | None:
    """Cancel and deadline are checked between calls too."""
    if cancelled:
        return Cancelled()
    if limits.max_duration_ms is not None and elapsed_ms >= limits.max_duration_ms:
        return Deadline(limits.max_duration_ms)
    return None


def interrupted_stop(limits: Limits, cancelled: bool) -> StopObject:
    """What interrupted a blocked wait: the caller's cancel, else the deadline."""
    if cancelled or limits.max_duration_ms is None:
        return Cancelled()
    return Deadline(limits.max_duration_ms)


def stop_after_usage(limits: Limits, spent: Spent, usage: Usage | None) -> StopObject | None:
    """Token and cost budgets after a turn reports, before its calls; fail closed without usage."""
    if usage is None:
        if limits.max_output_tokens is not None:
            return BudgetUnobservable("max-output-tokens")
        if limits.max_cost_micro_usd is not None:
            return BudgetUnobservable("max-cost")
        return None
    if limits.max_output_tokens is not None and spent.output_tokens >= limits.max_output_tokens:
        return MaxOutputTokens(limits.max_output_tokens, spent.output_tokens)
    if limits.max_cost_micro_usd is not None and spent.micro_usd >= limits.max_cost_micro_usd:
        return MaxCost(limits.max_cost_micro_usd, spent.micro_usd)
    return None


def stop_without_calls(stop: ProviderStop) -> StopObject:
    """The provider's stop of a turn without calls (docs/loop.md#the-turn-loop)."""
    if stop.kind == "max-output-tokens":
        return ProviderIncomplete("max_output_tokens")
    if stop.kind == "incomplete":
        return ProviderIncomplete(stop.reason or "incomplete")
    return Completed()


def unrun_text(stop: Stop) -> str:
    """The result item of a call a stop left unrun (docs/loop.md#the-turn-loop)."""
    if isinstance(stop, Cancelled):
        return "the run was cancelled before this call ran"
    if isinstance(stop, Deadline):
        return "the run's deadline passed before this call ran"
    return "the run stopped before this call ran"


class Price(msgspec.Struct, frozen=True):
    """USD per million tokens for one model."""

    input_usd_per_mtok: float
    cached_input_usd_per_mtok: float
    output_usd_per_mtok: float


class Prices(msgspec.Struct, frozen=True):
    """The ``--prices`` document."""

    source: str
    as_of: str
    models: dict[str, Price]


def parse_prices(raw: bytes, path: str) -> Result[Prices, str]:
    """The ``--prices`` file, or why it cannot be used."""
    try:
        return Success(msgspec.json.decode(raw, type=Prices))
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        return Failure(f"--prices {path} is not a prices document: {error}")


def micro_usd(usage: Usage, price: Price) -> int:
    """``ceil((input − cached)·in + cached·cached_in + output·out)`` in micro-USD, rounded up
    (docs/loop.md#the-turn-loop)."""
    fresh = max(usage.input_tokens - usage.cached_input_tokens, 0)
    total = (
        fresh * price.input_usd_per_mtok
        + usage.cached_input_tokens * price.cached_input_usd_per_mtok
        + usage.output_tokens * price.output_usd_per_mtok
    )
    return math.ceil(round(total, 6))
