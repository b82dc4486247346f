"""What judging cost: summed over assertion results, for run and suite summaries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from niceeval._core.assertion import AssertionResult


@dataclass(frozen=True, kw_only=True, slots=True)
class JudgeSpend:
    """Judge calls and their cost. Add two to combine runs: `sum(spends, JudgeSpend())`.

    Tokens count requests actually made; verdicts read from the judge cache are counted in `cached` and cost
    nothing.
    """

    calls: int = 0
    """Requests that reached a provider (`JudgeCall.sent`; a repair turn is part of its call, a fallback is a
    call of its own). Verdicts read from the judge cache are not calls: they are counted in `cached`."""
    cached: int = 0
    """Verdicts read from the judge cache (free; never a part of `calls`)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost: float = 0.0
    """USD over the priced models (see `unpriced_models` for the rest)."""
    unpriced_models: tuple[str, ...] = ()

    def __add__(self, other: JudgeSpend) -> JudgeSpend:
        return JudgeSpend(
            calls=self.calls + other.calls,
            cached=self.cached + other.cached,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cost=self.cost + other.cost,
            unpriced_models=tuple(dict.fromkeys(self.unpriced_models + other.unpriced_models)),
        )

    def __radd__(self, other: int) -> JudgeSpend:
        return self if other == 0 else NotImplemented

    @property
    def complete(self) -> bool:
        """True when every model asked has a price, so `cost` is the whole cost."""
        return not self.unpriced_models


def judge_spend(results: Iterable[AssertionResult]) -> JudgeSpend:
    """Sum the judge calls recorded in `results` (one run's assertions, or any number of runs')."""
    calls = cached = tokens_in = tokens_out = tokens_cached = 0
    cost = 0.0
    unpriced: dict[str, None] = {}
    for result in results:
        for call in result.judge_calls:
            if call.cached:
                cached += 1
            if not call.sent:
                continue
            calls += 1
            tokens_in += call.input_tokens
            tokens_out += call.output_tokens
            tokens_cached += call.cache_read_tokens
            spent_tokens = call.input_tokens + call.output_tokens + call.cache_read_tokens
            if call.cost is not None:
                cost += call.cost
            elif spent_tokens:  # no tokens spent costs nothing, priced or not
                unpriced[call.model] = None
    return JudgeSpend(
        calls=calls,
        cached=cached,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cache_read_tokens=tokens_cached,
        cost=cost,
        unpriced_models=tuple(unpriced),
    )
