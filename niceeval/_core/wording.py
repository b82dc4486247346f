"""How every report says a number: money, a count with its noun, judge calls.

One rule each, used by the console, the progress line, the GitHub step summary, the HTML report, `niceeval runs`
and the viewer, so the same run reads the same everywhere (the JSON report keeps plain numbers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from niceeval._core.assertion import AssertionResult

MISS_WORDS = 300
"""Characters of an eval's first miss shown in a list of evals (the HTML report's index, the viewer's run page)."""


def usd(cost: float | None) -> str:
    """USD as every report shows it.

    `$0` when nothing was spent, `<$0.0001` for less than that, four decimals under a dollar (`$0.0042`,
    `$0.1250`), two from a dollar up (`$12.34`), and `unpriced` when some model had no price (`None`).
    """
    if cost is None:
        return "unpriced"
    if cost == 0:
        return "$0"
    if cost < 0.00005:
        return "<$0.0001"
    if cost < 1:
        return f"${cost:.4f}"
    return f"${cost:,.2f}"


def share(value: float, decimals: int = 0) -> str:
    """A rate or a bound of its interval as every report shows it: a whole percent (`83%`), with the decimals it
    takes near the ends so that only 0 and 1 read `0%` and `100%` (`99.6%`, `99.96%`, `0.4%`; past three decimals
    `>99.999%`): 999 passes of 999 cases have a 95% interval of 99.6-100%, which whole percents showed as
    `100%-100%`. `decimals`: at least that many (`shares` gives an interval's bounds one precision)."""
    if not _NEAR_END < value < 1 - _NEAR_END:
        return f"{value:.0%}"  # 0 and 1 (a bound computed as 1 - 1e-16 is 1), and outside 0..1 as it is
    needed = _decimals(value)
    if needed is None:
        return "<0.001%" if value < 0.5 else ">99.999%"
    return f"{value:.{max(needed, decimals)}%}"


def shares(*values: float) -> list[str]:
    """Several shares at one precision, the most any of them takes (`99.3%-99.9%`, not `99%-99.9%`)."""
    inside = [_decimals(value) for value in values if _NEAR_END < value < 1 - _NEAR_END]
    decimals = max((3 if needed is None else needed for needed in inside), default=0)
    return [share(value, decimals) for value in values]


def share_range(low: float, high: float, between: str = "-") -> str:
    """An interval's bounds as shares at one precision: `99.3%-99.9%`."""
    return between.join(shares(low, high))


def _decimals(value: float) -> int | None:
    """The fewest decimals (0-3) at which a share strictly between 0 and 1 reads neither `0%` nor `100%`."""
    for decimals in (0, 1, 2, 3):
        text = f"{value:.{decimals}%}"
        if text not in (f"{0:.{decimals}%}", f"{1:.{decimals}%}"):
            return decimals
    return None


_NEAR_END = 1e-9
"""A share this close to 0 or 1 is read as it (floating-point rounding, not a measured difference)."""


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """`1 eval`, `2 evals`, `0 evals` (`nouns` for an irregular plural: `plural(n, "match", "matches")`)."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


class JudgeCounts(Protocol):
    """What `judge_calls` reads: `calls` made to a provider and verdicts read from the judge cache."""

    @property
    def calls(self) -> int: ...

    @property
    def cached(self) -> int: ...


def judge_calls(counts: JudgeCounts) -> str:
    """Judge calls as every report says them: `4 calls + 2 cached`, `1 call`, `0 calls + 3 cached`.

    A *call* is a request that reached a provider (it spent tokens); a *cached* verdict was read from the judge
    cache instead of a call, so the two add up to the verdicts used, and `cached` is never a part of `calls`.
    """
    said = plural(counts.calls, "call")
    return f"{said} + {counts.cached:,} cached" if counts.cached else said


def miss_words(error: str | None, assertion: AssertionResult | None) -> str | None:
    """An eval's first miss in one line, as lists of evals show it: the error that ended the run (`Type:
    message`), else its first failed assertion (`name: shortfall`); `None` when there is neither."""
    if error is not None:
        words = error
    elif assertion is not None:
        words = f"{assertion.name}: {assertion.shortfall()}"
    else:
        return None
    words = " ".join(words[: MISS_WORDS * 2].split())
    return words if len(words) <= MISS_WORDS else words[:MISS_WORDS] + "…"


def not_counted(infra: int) -> str:
    """`3 runs not counted: infra`: the runs left out of every pass rate because the infrastructure failed them."""
    return f"{plural(infra, 'run')} not counted: infra"
