"""Judge calls per model, counted one way for the viewer's run page and the HTML report.

The words are those of every report (`niceeval._core.wording.judge_calls`): a *call* reached a provider and spent
tokens, a *cached* verdict was read from the judge cache instead, a *not sent* one never left (no API key, a
`--cache-only` miss). The three add up to the judge records of the run, and the sums of `calls` and `cached`
over the models are the suite's `judge_spend.calls` and `.cached` that the console and the JSON report print.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from niceeval._core.assertion import JudgeCall


@dataclass(kw_only=True, slots=True)
class JudgeModelUse:
    """The judge calls one model answered in a suite run."""

    model: str
    calls: int = 0
    """Requests that reached the provider (`JudgeCall.sent`)."""
    cached: int = 0
    """Verdicts read from the judge cache instead of a call."""
    unsent: int = 0
    """Verdicts asked for that never left (no API key, a `--cache-only` miss)."""
    fallback: int = 0
    """Of all three, those made to this model as the fallback of another."""
    failed: int = 0
    """Calls (sent) that gave no verdict: rate limited, timed out, unparseable, ..."""
    tokens: int = 0
    """Tokens of the calls (input, output and provider cache reads); cached verdicts spend none."""
    cost: float | None = 0.0
    """USD; `None` when some call had no price."""

    @classmethod
    def of_row(cls, row: Sequence[Any]) -> JudgeModelUse:
        """A model's use as the store sums it (`store.tables.run_judging`: model, calls, cached, unsent, fallback,
        failed, tokens, cost)."""
        model, calls, cached, unsent, fallback, failed, tokens, cost = row
        return cls(model=model, calls=calls, cached=cached, unsent=unsent, fallback=fallback, failed=failed,
                   tokens=tokens, cost=cost)  # fmt: skip

    def add(self, call: JudgeCall) -> None:
        """Count one judge record of this model."""
        if call.cached:
            self.cached += 1
        elif call.sent:
            self.calls += 1
            self.failed += call.cause is not None
            spent = call.input_tokens + call.output_tokens + call.cache_read_tokens
            self.tokens += spent
            if call.cost is not None and self.cost is not None:
                self.cost += call.cost
            elif spent:  # as `judge_spend` has it: no tokens spent costs nothing, priced or not
                self.cost = None
        else:
            self.unsent += 1
        self.fallback += call.fallback
