"""Each judge call records its cost from the price table; spends sum per run and across runs."""

from __future__ import annotations

import pytest
from judge_helpers import ANTHROPIC, OPENAI, RUBRIC_PASS, Run, answer

from niceeval._core.settings import Price
from niceeval.judge import JudgeSpend, judge_spend
from niceeval.testing import LLMRequest, Reply, TokenUsage

USAGE = TokenUsage(input_tokens=1_000, output_tokens=200, cached_tokens=400)


def priced(request: LLMRequest) -> Reply:
    return answer(request, RUBRIC_PASS, USAGE)


def test_openai_cost_uses_the_builtin_price_and_splits_cached_tokens(run: Run) -> None:
    run.server.set_script(priced)
    (result,) = run(lambda t: t.rubric("Is it polite?", model="openai/gpt-4o-mini"))
    (call,) = result.judge_calls
    assert (call.input_tokens, call.cache_read_tokens, call.output_tokens) == (600, 400, 200)
    # gpt-4o-mini: $0.15 in, $0.60 out, $0.075 cache read, per million tokens
    assert call.cost == pytest.approx((600 * 0.15 + 200 * 0.60 + 400 * 0.075) / 1e6)


def test_anthropic_cost_and_config_overrides(run: Run) -> None:
    run.server.set_script(priced)
    run.pricing = {ANTHROPIC: Price(input_per_mtok=2.0, output_per_mtok=10.0, cache_read_per_mtok=0.5)}
    (result,) = run(lambda t: t.rubric("Is it polite?", model=ANTHROPIC))
    (call,) = result.judge_calls
    assert (call.input_tokens, call.cache_read_tokens, call.output_tokens) == (600, 400, 200)
    assert call.cost == pytest.approx((600 * 2.0 + 200 * 10.0 + 400 * 0.5) / 1e6)


def test_an_unpriced_model_has_no_cost_and_is_listed(run: Run) -> None:
    run.server.set_script(priced)
    results = run(lambda t: [t.rubric("Is it polite?", model="openai/house-judge"), t.rubric("Kind?")])
    assert results[0].judge_calls[0].cost is None
    spend = judge_spend(results)
    assert spend.unpriced_models == ("openai/house-judge",) and not spend.complete
    assert spend.cost == pytest.approx(results[1].judge_calls[0].cost or 0)


def test_spend_sums_calls_tokens_and_cost_across_runs(run: Run) -> None:
    run.server.set_script(priced)
    first = run(lambda t: [t.rubric("a"), t.rubric("b")])
    second = run(lambda t: t.rubric("c"))
    per_run = [judge_spend(first), judge_spend(second)]
    total = sum(per_run, JudgeSpend())
    assert total == judge_spend(first + second)
    assert (total.calls, total.cached, total.input_tokens, total.output_tokens) == (3, 0, 1_800, 600)
    assert total.cost == pytest.approx(3 * (600 * 0.15 + 200 * 0.60 + 400 * 0.075) / 1e6)


def test_a_fallback_call_is_priced_on_its_own_model(run: Run) -> None:
    run.server.set_script(lambda request: "garbage" if request.provider == "openai" else priced(request))
    run.settings = {"model": OPENAI, "fallback": ANTHROPIC}
    (result,) = run(lambda t: t.rubric("Is it polite?"))
    primary, fallback = result.judge_calls
    assert primary.cost is not None and primary.cost > 0  # the garbage answers still cost tokens
    assert fallback.cost == pytest.approx((600 * 1.0 + 200 * 5.0 + 400 * 0.10) / 1e6)
    assert judge_spend([result]).calls == 2
