"""Prices per million tokens, and cost from usage. The built-in table is overridable in config.

Keys are `provider/model`. Lookup order: the config's exact key, the config's `provider/*`, the built-in exact
key, then the longest built-in key the model name starts with (so dated snapshots such as
`gpt-4o-mini-2024-07-18` find `gpt-4o-mini`). A model with no price has no cost: `None`, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping

from niceeval._core.settings import Price

PRICES_AS_OF = "2026-11"

_BUILTIN: dict[str, tuple[float, float, float | None]] = {
    # provider/model: (input, output, cache read) USD per million tokens
    "openai/gpt-5.4": (1.25, 10.0, 0.125),
    "openai/gpt-5.4-mini": (0.15, 0.60, 0.015),
    "openai/gpt-5": (1.25, 10.0, 0.125),
    "openai/gpt-5-mini": (0.25, 2.0, 0.025),
    "openai/gpt-5-nano": (0.05, 0.40, 0.005),
    "openai/gpt-4.1": (2.0, 8.0, 0.50),
    "openai/gpt-4.1-mini": (0.40, 1.60, 0.10),
    "openai/gpt-4.1-nano": (0.10, 0.40, 0.025),
    "openai/gpt-4o": (2.50, 10.0, 1.25),
    "openai/gpt-4o-mini": (0.15, 0.60, 0.075),
    "openai/o3": (2.0, 8.0, 0.50),
    "openai/o4-mini": (1.10, 4.40, 0.275),
    "anthropic/claude-opus-4-5": (5.0, 25.0, 0.50),
    "anthropic/claude-opus-4-1": (15.0, 75.0, 1.50),
    "anthropic/claude-opus-4": (15.0, 75.0, 1.50),
    "anthropic/claude-sonnet-4-5": (3.0, 15.0, 0.30),
    "anthropic/claude-sonnet-4": (3.0, 15.0, 0.30),
    "anthropic/claude-haiku-4-5": (1.0, 5.0, 0.10),
    "anthropic/claude-3-5-haiku": (0.80, 4.0, 0.08),
    "anthropic/claude-3-7-sonnet": (3.0, 15.0, 0.30),
}
BUILTIN_PRICES: dict[str, Price] = {
    key: Price(input_per_mtok=i, output_per_mtok=o, cache_read_per_mtok=c) for key, (i, o, c) in _BUILTIN.items()
}


def find_price(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of `provider/model`, or None when neither the config nor the built-in table knows it."""
    overrides = overrides or {}
    provider = model.split("/", 1)[0] if "/" in model else ""
    for key in (model, f"{provider}/*"):
        if key in overrides:
            return overrides[key]
    if model in BUILTIN_PRICES:
        return BUILTIN_PRICES[model]
    prefixes = [key for key in BUILTIN_PRICES if model.startswith(key + "-")]
    return BUILTIN_PRICES[max(prefixes, key=len)] if prefixes else None


def cost_of(price: Price, *, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0) -> float:
    """USD for one call. Cache reads are billed at the cache price when there is one, else as input."""
    cache_rate = price.cache_read_per_mtok if price.cache_read_per_mtok is not None else price.input_per_mtok
    return (
        input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok + cache_read_tokens * cache_rate
    ) / 1_000_000
