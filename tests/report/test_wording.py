"""One way to say money, counts and judge calls, in every report (niceeval._core.wording)."""

from __future__ import annotations

import pytest

from niceeval._core.assertion import AssertionResult, JudgeCall
from niceeval._core.results import Spend
from niceeval._core.wording import judge_calls, plural, share, share_range, usd
from niceeval.judge import judge_spend
from niceeval.render import JudgeModelUse
from niceeval.render._uncertainty import interval_text, percent, rate_over_cases


@pytest.mark.parametrize(
    ("cost", "said"),
    [
        (None, "unpriced"),
        (0.0, "$0"),
        (0.00001, "<$0.0001"),
        (0.00042, "$0.0004"),
        (0.0532, "$0.0532"),
        (0.5, "$0.5000"),
        (12.345, "$12.35"),
        (1234.5, "$1,234.50"),
    ],
)
def test_money_has_one_rule(cost: float | None, said: str) -> None:
    assert usd(cost) == said


def test_counts_take_the_noun_in_the_right_number() -> None:
    assert [plural(n, "eval") for n in (0, 1, 2, 1500)] == ["0 evals", "1 eval", "2 evals", "1,500 evals"]
    assert plural(1, "match", "matches") == "1 match" and plural(3, "match", "matches") == "3 matches"


def test_cached_verdicts_are_never_a_part_of_the_calls() -> None:
    assert judge_calls(Spend(calls=4, cached=2)) == "4 calls + 2 cached"
    assert judge_calls(Spend(calls=1)) == "1 call"
    assert judge_calls(Spend(calls=0, cached=3)) == "0 calls + 3 cached"


def _judged(*calls: JudgeCall) -> AssertionResult:
    return AssertionResult(
        name="rubric", severity="soft", score=None, threshold=0.5, state="passed", judge_calls=list(calls)
    )


def test_the_per_model_table_and_the_spend_count_the_same_calls() -> None:
    sent = JudgeCall(model="openai/j", input_tokens=100, output_tokens=10, cost=0.001)
    timed_out = JudgeCall(model="openai/j", cause="timeout", cost=None)
    # written before cached verdicts were recorded as not asked: still a cached verdict, not a call
    old_cached = JudgeCall(model="openai/j", cached=True, asked=True, input_tokens=100, cost=0.0)
    keyless = JudgeCall(model="openai/j", asked=False, cause="no_api_key", cost=None)
    use = JudgeModelUse(model="openai/j")
    for call in (sent, timed_out, old_cached, keyless):
        use.add(call)
    spend = judge_spend([_judged(sent, timed_out, old_cached, keyless)])
    assert (use.calls, use.cached, use.unsent, use.failed) == (2, 1, 1, 1)
    assert (spend.calls, spend.cached) == (use.calls, use.cached)
    assert (use.tokens, use.cost) == (110, pytest.approx(0.001))


def test_a_share_reads_0_or_100_percent_only_when_it_is() -> None:
    assert [share(v) for v in (0.0, 1.0, 0.833, 0.5)] == ["0%", "100%", "83%", "50%"]
    # near the ends, the decimals it takes to differ from them
    assert [share(v) for v in (0.9962, 0.99962, 0.004, 0.00004)] == ["99.6%", "99.96%", "0.4%", "0.004%"]
    assert (share(0.9999996), share(0.0000004)) == (">99.999%", "<0.001%")
    # a bound a float's rounding away from an end is that end
    assert (share(1 - 1e-15), share(1e-15)) == ("100%", "0%")


def test_an_intervals_bounds_read_at_one_precision() -> None:
    assert share_range(0.99276, 0.9994) == "99.3%-99.9%"  # not 99%-99.9%
    assert share_range(0.74, 1.0) == "74%-100%"  # an exact end stays whole
    assert share_range(0.0, 0.0004) == "0%-0.04%"
    assert share_range(0.35, 0.99) == "35%-99%"


def test_999_passes_of_999_cases_do_not_read_as_a_certain_100_percent() -> None:
    estimate = rate_over_cases((case, 1, 1) for case in range(999))
    assert interval_text(estimate) == "95% CI 99.6%-100%"
    assert percent(estimate) == "100% (95% CI 99.6%-100%)"
