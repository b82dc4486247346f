"""Usage and cost of a run, and the efficiency assertions `max_tokens` / `max_cost`.

Within the limit an efficiency assertion scores 1.0; beyond it, `limit / actual`. Gate by default, threshold 1.0,
so `t.max_tokens(80_000).at_least(0.7)` tolerates up to ~43% over the limit as a soft signal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from niceeval._core.assertion import Inconclusive, Matcher, ScoreLike, Verdict
from niceeval._core.errors import UsageError
from niceeval._core.events import Event, UsageEvent, latencies
from niceeval._core.settings import Price
from niceeval.providers import cost_of, find_price


@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """Tokens and cost summed over a run's `usage` events (agent calls; judge calls are counted apart)."""

    input_tokens: int = 0
    """Input tokens not served from cache."""
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost: float | None = 0.0
    """USD, or None when some model has no price (see `unpriced_models`)."""
    unpriced_models: tuple[str, ...] = ()

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.output_tokens


def usage_of(
    events: Sequence[Event], pricing: Mapping[str, Price], *, billed_to: Literal["agent", "judge"] = "agent"
) -> Usage:
    """Sum the usage events billed to `billed_to` (the agent's by default); price each by its own cost, else by
    the price table."""
    tokens_in = tokens_out = cached = 0
    cost = 0.0
    unpriced: list[str] = []
    for e in events:
        if not isinstance(e, UsageEvent) or e.billed_to != billed_to:
            continue
        tokens_in, tokens_out, cached = (
            tokens_in + e.input_tokens,
            tokens_out + e.output_tokens,
            cached + e.cache_read_tokens,
        )
        if e.cost is not None:
            cost += e.cost
            continue
        price = find_price(e.model, pricing)
        if price is None:
            if e.model not in unpriced:
                unpriced.append(e.model)
            continue
        cost += cost_of(
            price, input_tokens=e.input_tokens, output_tokens=e.output_tokens, cache_read_tokens=e.cache_read_tokens
        )
    return Usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cache_read_tokens=cached,
        cost=None if unpriced else cost,
        unpriced_models=tuple(unpriced),
    )


def _ratio(limit: float, actual: float) -> float:
    return 1.0 if actual <= limit else limit / actual


def max_tokens(limit: int, pricing: Mapping[str, Price]) -> Matcher:
    """Total tokens (input + cache read + output) stay within `limit`."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise UsageError(f"max_tokens() takes a positive whole number of tokens, got {limit!r}.")

    def score(events: Sequence[Event]) -> ScoreLike:
        used = usage_of(events, pricing).total_tokens
        return Verdict(_ratio(limit, used), f"{used:,} tokens used of {limit:,}", actual=f"{used:,} tokens")

    return Matcher(name=f"max_tokens({limit:,})", score_fn=score, expected=f"at most {limit:,} tokens")


def max_cost(limit: float, pricing: Mapping[str, Price]) -> Matcher:
    """Estimated cost in USD stays within `limit`; inconclusive when a model has no price."""
    if isinstance(limit, bool) or not isinstance(limit, int | float) or limit <= 0:
        raise UsageError(f"max_cost() takes a positive amount in USD, got {limit!r}.")

    def score(events: Sequence[Event]) -> ScoreLike:
        usage = usage_of(events, pricing)
        if usage.cost is None:
            models = ", ".join(usage.unpriced_models)
            raise Inconclusive(
                "no_price",
                f"no price for {models}; add it to define_config(pricing={{'{usage.unpriced_models[0]}': "
                "{'input_per_mtok': ..., 'output_per_mtok': ...}})",
            )
        return Verdict(_ratio(limit, usage.cost), f"${usage.cost:.4f} of ${limit:.4f}", actual=f"${usage.cost:.4f}")

    return Matcher(name=f"max_cost(${limit:g})", score_fn=score, expected=f"at most ${limit:g}")


def max_latency(seconds: float) -> Matcher:
    """Every turn in scope took at most `seconds` (gate; score `limit / slowest` beyond it)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        raise UsageError(f"max_latency() takes a positive number of seconds, got {seconds!r}.")

    def score(events: Sequence[Event]) -> ScoreLike:
        measured = latencies(list(events))
        if not measured:
            return Verdict(False, "no turn was measured: nothing was sent to the agent in this scope")
        slowest = max(measured)
        shown = f"slowest turn {slowest:.3g} s of {len(measured)}"
        if slowest <= seconds:
            return Verdict(True, shown, actual=f"{slowest:.3g} s")
        return Verdict(_ratio(seconds, slowest), shown, actual=f"{slowest:.3g} s")

    return Matcher(name=f"max_latency({seconds:g}s)", score_fn=score, expected=f"every turn within {seconds:g} s")
