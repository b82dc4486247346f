"""Prices: the config's override, then genai-prices, then the built-in table, then no price (never a guessed 0)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from niceeval import Price
from niceeval.providers import _pricing
from niceeval.providers._pricing import BUILTIN_PRICES, cost_of, find_price

CURRENT = ["openai/gpt-5.1", "openai/gpt-5.2", "openai/gpt-3.5-turbo"]
"""Models in use that the built-in table does not list."""


@pytest.fixture
def fresh_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: nothing loaded, nothing resolved."""
    monkeypatch.setattr(_pricing, "_catalog", None)
    monkeypatch.setattr(_pricing, "_started", False)
    monkeypatch.setattr(_pricing, "_RESOLVED", {})


@pytest.mark.parametrize("model", CURRENT)
def test_a_current_model_the_table_lacks_is_priced_by_genai_prices(model: str) -> None:
    assert model not in BUILTIN_PRICES and _pricing._from_table(model) is None
    price = find_price(model)
    assert price is not None
    assert price.input_per_mtok > 0 and price.output_per_mtok > price.input_per_mtok


def test_dated_snapshots_and_aliases_find_their_model() -> None:
    assert find_price("openai/gpt-4o-mini-2024-07-18") == find_price("openai/gpt-4o-mini")
    assert find_price("anthropic/claude-haiku-4-5-20251001") == find_price("anthropic/claude-haiku-4-5")


def test_an_unknown_model_or_provider_has_no_price() -> None:
    assert find_price("openai/house-judge") is None
    assert find_price("acme/x") is None
    assert find_price("no-provider") is None


def test_the_configs_override_wins_exact_then_provider_wide() -> None:
    exact = Price(input_per_mtok=9.0, output_per_mtok=9.0)
    wide = Price(input_per_mtok=7.0, output_per_mtok=7.0)
    overrides = {"openai/gpt-5.1": exact, "openai/*": wide}
    assert find_price("openai/gpt-5.1", overrides) == exact
    assert find_price("openai/gpt-3.5-turbo", overrides) == wide
    assert find_price("openai/house-judge", overrides) == wide  # even a model nobody prices
    assert find_price("anthropic/claude-haiku-4-5", overrides) == find_price("anthropic/claude-haiku-4-5")


def test_without_genai_prices_the_table_prices_what_it_lists(
    fresh_prices: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # `import genai_prices` raises ImportError
    assert find_price("openai/gpt-4o-mini") == BUILTIN_PRICES["openai/gpt-4o-mini"]
    assert find_price("openai/gpt-4o-mini-2024-07-18") == BUILTIN_PRICES["openai/gpt-4o-mini"]
    assert find_price("openai/gpt-5.1") is None  # not in the table: no price, not a guess


def test_each_model_name_is_looked_up_once(fresh_prices: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import genai_prices

    asked: list[str] = []
    real = genai_prices.calc_price

    def counting(*args: object, **kwargs: object) -> object:
        asked.append(str(args[1]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(genai_prices, "calc_price", counting)
    _pricing.load_prices()  # loading reads one price, so that the data module loads there
    asked.clear()
    prices = [find_price(model) for model in ["openai/gpt-5.1", "openai/house-judge"] * 50]
    assert asked == ["gpt-5.1", "house-judge"]  # a miss is remembered too
    assert prices[0] is prices[2] and prices[1] is None


def test_tiered_prices_are_read_at_their_base_tier() -> None:
    """genai-prices prices long prompts higher from a threshold on; niceeval's Price holds the base rate."""
    from genai_prices import Usage, calc_price

    found = calc_price(Usage(input_tokens=1000, output_tokens=100), "claude-sonnet-4-5", provider_id="anthropic")
    price = find_price("anthropic/claude-sonnet-4-5")
    assert price is not None
    assert cost_of(price, input_tokens=1000, output_tokens=100) == pytest.approx(float(found.total_price))


def test_loading_in_the_background_then_awaiting_gives_the_catalog(fresh_prices: None) -> None:
    import anyio

    _pricing.load_prices_in_background()
    _pricing.load_prices_in_background()  # started once
    anyio.run(_pricing.prices_ready)
    assert _pricing.prices_loaded()
    assert find_price("openai/gpt-5.1") is not None


def test_the_guides_pricing_example_overrides_as_it_says() -> None:
    guide = (Path(__file__).resolve().parent.parent / "docs" / "guide.md").read_text(encoding="utf-8")
    section = guide[guide.index("**Prices.**") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(compile(block.group(1), "docs/guide.md", "exec"), namespace)
    pricing = namespace["config"].pricing  # type: ignore[attr-defined]
    negotiated = Price(input_per_mtok=1.0, output_per_mtok=8.0, cache_read_per_mtok=0.1)
    assert find_price("openai/gpt-5.1", pricing) == negotiated
    assert find_price("ollama/llama3", pricing) == Price(input_per_mtok=0, output_per_mtok=0)
    assert find_price("openai/gpt-5.2", pricing) == find_price("openai/gpt-5.2")  # not overridden: genai-prices
