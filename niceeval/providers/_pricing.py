"""Prices per million tokens, and cost from usage.

Lookup order for `provider/model`: the config's exact key, then the config's `provider/*`; then genai-prices
(pydantic's maintained price data: every provider's current models, their aliases and dated snapshots); then the
built-in table below (exact key, then the longest key the model name starts with, so `gpt-4o-mini-2024-07-18`
finds `gpt-4o-mini`), for a model genai-prices does not know or when it is not installed. A model with no price
has no cost: `None`, never 0.

genai-prices' data module is large and slow to import: `load_prices()` loads it once per process, blocking, so
the runner calls it in a worker thread before the first price is needed (the SDK warm-up, `await
prices_ready()`). `find_price` resolves each model name once and caches it: a call costs a few dict lookups.
In a suite the runner also keeps those answers in `.niceeval/prices.json` (`use_price_memo`, `save_price_memo`:
see `_price_memo`): a model found there is priced without loading genai-prices at all. Its cost is in
bench/NOTES.md ("Prices").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from niceeval._core.settings import Price
from niceeval._core.threads import once_off_loop

if TYPE_CHECKING:
    from decimal import Decimal
    from pathlib import Path

    from genai_prices.types import ModelPrice, TieredPrices

PRICES_AS_OF = "2026-11"

_BUILTIN: dict[str, tuple[float, float, float | None]] = {
    # provider/model: (input, output, cache read) USD per million tokens
    "openai/gpt-5.4": (2.50, 15.0, 0.25),  # base tier: genai-prices has more for prompts over 272K tokens
    "openai/gpt-5.4-mini": (0.75, 4.50, 0.075),
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


Lookup = Callable[[str], Price | None]

_catalog: Lookup | None = None
"""genai-prices' lookup, once `load_prices()` has run."""
_LOADING = threading.Lock()
_RESOLVED: dict[str, Price | None] = {}
"""Each model name's price from genai-prices or the table (not the config's overrides, which differ per suite)."""


def find_price(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of `provider/model`, or None when neither the config, genai-prices nor the table knows it."""
    if overrides and (price := _overridden(model, overrides)) is not None:
        return price
    try:
        return _RESOLVED[model]
    except KeyError:
        pass
    if _memo is not None and _memo.key is None:
        _open_memo()
        if model in _RESOLVED:
            return _RESOLVED[model]
    if _catalog is None:
        load_prices()  # a caller outside the runner; the runner has loaded it off the event loop already
    assert _catalog is not None
    price = _catalog(model) or _from_table(model)
    _RESOLVED[model] = price
    return price


def _overridden(model: str, overrides: Mapping[str, Price]) -> Price | None:
    """The config's price for `model`: its exact key, else its provider's `provider/*`."""
    provider = model.split("/", 1)[0] if "/" in model else ""
    for key in (model, f"{provider}/*"):
        if key in overrides:
            return overrides[key]
    return None


def prices_loaded() -> bool:
    return _catalog is not None


def load_prices() -> None:
    """Load genai-prices' data, once per process (blocking: call it from a worker thread)."""
    global _catalog
    with _LOADING:
        if _catalog is None:
            _catalog = _genai_prices()


_started = False
_STARTING = threading.Lock()


def load_prices_in_background() -> None:
    """Start `load_prices()` in a daemon thread, once, so it overlaps the model calls whose cost needs it."""
    global _started
    memo = _open_memo()
    if memo is not None and memo.held:  # the memo prices the project's models; one it lacks loads when asked for
        return
    with _STARTING:
        if _started or _catalog is not None:
            return
        _started = True
    threading.Thread(target=load_prices, name="niceeval-prices", daemon=True).start()


async def prices_ready(models: Iterable[str] | None = None, overrides: Mapping[str, Price] | None = None) -> None:
    """`load_prices()` in a worker thread, unless done: await it in a coroutine before `find_price`. Given the
    `models` to price, only when the config's `overrides`, the memo or an earlier lookup do not price them all."""
    if models is not None and prices_known(models, overrides):
        return
    await once_off_loop("prices", load_prices, prices_loaded)


def prices_known(models: Iterable[str], overrides: Mapping[str, Price] | None = None) -> bool:
    """Whether `find_price` answers each of `models` without genai-prices (a few dict lookups, once the memo is
    read)."""
    for model in models:
        if model in _RESOLVED or (overrides and _overridden(model, overrides) is not None):
            continue
        if _memo is None or _memo.key is not None:
            return False
        _open_memo()
        if model not in _RESOLVED:
            return False
    return True


@dataclass(slots=True)
class _Memo:
    root: Path
    """The project's root: the file is `<root>/.niceeval/prices.json`."""
    key: dict[str, object] | None = None
    """What it was read under (None: not read yet; it is read on the first price asked for)."""
    held: frozenset[str] = frozenset()
    """The models the file held when read or last written."""


_memo: _Memo | None = None
_MEMO_LOCK = threading.Lock()


def use_price_memo(root: Path | None) -> None:
    """Keep each model's resolved price in the project at `root`'s `.niceeval/prices.json` (for a suite), read on
    first need and written by `save_price_memo()`; None: no memo (the default, outside a run)."""
    global _memo
    with _MEMO_LOCK:
        _memo = None if root is None else _Memo(root)


def _open_memo() -> _Memo | None:
    """The memo, its fresh prices read into `_RESOLVED` (once)."""
    memo = _memo
    if memo is None:
        return None
    with _MEMO_LOCK:
        if memo.key is None:
            from niceeval.providers import _price_memo

            key = _price_memo.current_key(_BUILTIN)
            held = _price_memo.read(memo.root / _price_memo.FILE, key)
            for model, price in held.items():
                _RESOLVED.setdefault(model, price)
            memo.key, memo.held = key, frozenset(held)
    return memo


def save_price_memo() -> None:
    """Write the models resolved since the memo was read into it, when there are any (once, at the suite's end)."""
    memo = _memo
    if memo is None or memo.key is None:  # not read: nothing was priced
        return
    from niceeval.providers import _price_memo

    if memo.key["day"] != _price_memo.today():  # the suite ran past midnight: today's prices may differ
        return
    resolved = dict(_RESOLVED)
    if resolved.keys() - memo.held and _price_memo.write(memo.root / _price_memo.FILE, memo.key, resolved):
        memo.held = frozenset(resolved)


def _genai_prices() -> Lookup:
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # niceeval installed without its dependencies: the table still prices the common models
        return lambda model: None
    nothing = Usage(input_tokens=0, output_tokens=0)
    now = datetime.now(UTC)  # a price that changes on a date (genai-prices knows some) is read as of today
    calc_price(nothing, "gpt-4o-mini", provider_id="openai")  # its data module loads on first use: here, not later

    def lookup(model: str) -> Price | None:
        provider, _, name = model.partition("/")
        if not name:
            return None
        try:
            found = calc_price(nothing, name, provider_id=provider, genai_request_timestamp=now)
        except LookupError:  # an unknown provider or model
            return None
        return _as_price(found.model_price)

    return lookup


def _as_price(prices: ModelPrice) -> Price | None:
    """Per-token prices as niceeval's `Price`; tiered prices (long prompts cost more) at their base tier."""
    rates = [_rate(prices.input_mtok), _rate(prices.output_mtok), _rate(prices.cache_read_mtok)]
    if rates[0] is None or rates[1] is None:  # priced per request, image or second: not by tokens
        return None
    return Price(input_per_mtok=rates[0], output_per_mtok=rates[1], cache_read_per_mtok=rates[2])


def _rate(value: Decimal | TieredPrices | None) -> float | None:
    from genai_prices.types import TieredPrices

    if isinstance(value, TieredPrices):
        return float(value.base)
    return None if value is None else float(value)


def _from_table(model: str) -> Price | None:
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
