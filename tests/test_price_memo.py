"""`.niceeval/prices.json`: a suite keeps each model's resolved price, and the next run reads it instead of loading
genai-prices; only while the day and genai-prices' data are the same, and never over the config's `pricing=`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from niceeval import Price
from niceeval.providers import _price_memo, _pricing
from niceeval.providers._pricing import BUILTIN_PRICES, find_price

MODEL = "openai/gpt-5.1"
"""A model genai-prices prices and the built-in table does not list."""
FAKE = Price(input_per_mtok=123.0, output_per_mtok=456.0)
"""A price no source gives: found only when read from a memo."""


@pytest.fixture(autouse=True)
def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: nothing loaded, nothing resolved, no memo."""
    monkeypatch.setattr(_pricing, "_catalog", None)
    monkeypatch.setattr(_pricing, "_started", False)
    monkeypatch.setattr(_pricing, "_RESOLVED", {})
    monkeypatch.setattr(_pricing, "_memo", None)


def _next_run(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next run's process: nothing loaded or resolved; the suite points `_pricing` at the project's memo."""
    monkeypatch.setattr(_pricing, "_catalog", None)
    monkeypatch.setattr(_pricing, "_started", False)
    monkeypatch.setattr(_pricing, "_RESOLVED", {})
    _pricing.use_price_memo(root)


def _suite(root: Path, models: list[str], overrides: dict[str, Price] | None = None) -> list[Price | None]:
    """What a suite does: point at the memo, price `models`, save what was new."""
    _pricing.use_price_memo(root)
    prices = [find_price(model, overrides) for model in models]
    _pricing.save_price_memo()
    _pricing.use_price_memo(None)
    return prices


def _memo(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / ".niceeval" / "prices.json").read_text(encoding="utf-8"))
    return data


def _genai_prices_price(model: str) -> Price | None:
    """The price genai-prices gives, asked directly."""
    from genai_prices import Usage, calc_price

    provider, _, name = model.partition("/")
    return _pricing._as_price(
        calc_price(Usage(input_tokens=0, output_tokens=0), name, provider_id=provider).model_price
    )


def _write_memo(root: Path, key: dict[str, object], prices: dict[str, object]) -> None:
    (root / ".niceeval").mkdir(exist_ok=True)
    (root / ".niceeval" / "prices.json").write_text(json.dumps({"key": key, "prices": prices}), encoding="utf-8")


def test_a_suite_writes_each_models_price_as_genai_prices_gives_it(tmp_path: Path) -> None:
    [price] = _suite(tmp_path, [MODEL])
    assert price is not None and price == _genai_prices_price(MODEL)
    memo = _memo(tmp_path)
    assert memo["prices"] == {MODEL: price.model_dump()}
    assert memo["key"] == _price_memo.current_key(_pricing._BUILTIN)
    assert memo["key"]["day"] == _price_memo.today()


def test_the_next_run_prices_from_the_memo_without_loading_genai_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [first] = _suite(tmp_path, [MODEL])
    _next_run(tmp_path, monkeypatch)
    _pricing.load_prices_in_background()  # the SDK warm-up: the memo prices the project, so nothing starts
    assert find_price(MODEL) == first
    anyio.run(lambda: _pricing.prices_ready([MODEL]))
    assert not _pricing._started and not _pricing.prices_loaded()


def test_a_model_the_memo_lacks_loads_genai_prices_and_joins_the_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _suite(tmp_path, [MODEL])
    _next_run(tmp_path, monkeypatch)
    assert _pricing.prices_known([MODEL]) and not _pricing.prices_known([MODEL, "openai/gpt-5.2"])
    anyio.run(lambda: _pricing.prices_ready([MODEL, "openai/gpt-5.2"]))  # in a worker thread
    assert _pricing.prices_loaded()
    added = find_price("openai/gpt-5.2")
    _pricing.save_price_memo()
    assert added is not None and _memo(tmp_path)["prices"]["openai/gpt-5.2"] == added.model_dump()
    assert MODEL in _memo(tmp_path)["prices"]


def test_an_unknown_model_is_memoized_as_no_price_and_stays_unpriced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _suite(tmp_path, ["openai/scripted"]) == [None]
    assert _memo(tmp_path)["prices"] == {"openai/scripted": None}
    _next_run(tmp_path, monkeypatch)
    assert find_price("openai/scripted") is None
    assert not _pricing.prices_loaded()  # the memo's "no price" answered: genai-prices was not asked again


def test_the_tables_answer_is_memoized_when_genai_prices_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # `import genai_prices` raises ImportError
    assert _suite(tmp_path, ["openai/gpt-4o-mini-2024-07-18"]) == [BUILTIN_PRICES["openai/gpt-4o-mini"]]
    memo = _memo(tmp_path)
    assert memo["key"]["genai_prices"] == "absent"
    assert memo["prices"] == {"openai/gpt-4o-mini-2024-07-18": BUILTIN_PRICES["openai/gpt-4o-mini"].model_dump()}
    _next_run(tmp_path, monkeypatch)
    assert find_price("openai/gpt-4o-mini-2024-07-18") == BUILTIN_PRICES["openai/gpt-4o-mini"]
    assert not _pricing.prices_loaded()


@pytest.mark.parametrize(
    "stale",
    [
        pytest.param({"day": "2000-01-01"}, id="another-day"),
        pytest.param({"genai_prices": "/elsewhere/genai_prices/data.py:1:2"}, id="other-genai-prices-data"),
        pytest.param({"table": 0}, id="another-built-in-table"),
        pytest.param({"format": 0}, id="another-format"),
    ],
)
def test_a_memo_under_another_key_is_ignored_and_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stale: dict[str, object]
) -> None:
    key = {**_price_memo.current_key(_pricing._BUILTIN), **stale}
    _write_memo(tmp_path, key, {MODEL: FAKE.model_dump()})
    [price] = _suite(tmp_path, [MODEL])
    assert price == _genai_prices_price(MODEL) != FAKE
    assert _memo(tmp_path)["key"] == _price_memo.current_key(_pricing._BUILTIN)
    assert _memo(tmp_path)["prices"] == {MODEL: price.model_dump()}  # the stale model's fake price is gone


def test_a_fresh_memos_price_is_the_one_used(tmp_path: Path) -> None:
    """The counterpart of the stale cases: the same file under today's key is read (FAKE proves where it came from)."""
    _write_memo(tmp_path, _price_memo.current_key(_pricing._BUILTIN), {MODEL: FAKE.model_dump()})
    assert _suite(tmp_path, [MODEL]) == [FAKE]
    assert not _pricing.prices_loaded()


CORRUPT: dict[str, Callable[[dict[str, object]], bytes]] = {
    "corrupt": lambda key: b"{not json",
    "not-utf8": lambda key: b"\xff\xfe\x00",
    "a-list": lambda key: b"[1, 2]",
    "no-key": lambda key: b'{"prices": {}}',
    "prices-a-list": lambda key: json.dumps({"key": key, "prices": [MODEL]}).encode(),
    "price-of-another-shape": lambda key: json.dumps(
        {"key": key, "prices": {MODEL: {"input_per_mtok": "lots"}, "x/y": None}}
    ).encode(),
    "negative-price": lambda key: json.dumps(
        {"key": key, "prices": {MODEL: {"input_per_mtok": -1, "output_per_mtok": 1}}}
    ).encode(),
}


@pytest.mark.parametrize("shape", CORRUPT)
def test_a_corrupt_or_foreign_memo_is_ignored_and_rewritten(tmp_path: Path, shape: str) -> None:
    key = _price_memo.current_key(_pricing._BUILTIN)
    (tmp_path / ".niceeval").mkdir()
    (tmp_path / ".niceeval" / "prices.json").write_bytes(CORRUPT[shape](key))
    [price] = _suite(tmp_path, [MODEL])
    assert price is not None and price == _genai_prices_price(MODEL)
    assert _memo(tmp_path) == {"key": key, "prices": {MODEL: price.model_dump()}}


def test_the_configs_override_wins_over_the_memo(tmp_path: Path) -> None:
    _write_memo(tmp_path, _price_memo.current_key(_pricing._BUILTIN), {MODEL: FAKE.model_dump(), "openai/x": None})
    negotiated = Price(input_per_mtok=1.0, output_per_mtok=2.0)
    assert _suite(tmp_path, [MODEL, "openai/x"], {MODEL: negotiated, "openai/*": FAKE}) == [negotiated, FAKE]
    assert _pricing.prices_known([MODEL, "openai/other"], {"openai/*": FAKE})


def test_a_project_that_cannot_be_written_to_has_no_memo_and_no_error(tmp_path: Path) -> None:
    (tmp_path / ".niceeval").write_text("a file where the folder would be", encoding="utf-8")
    [price] = _suite(tmp_path, [MODEL])
    assert price == _genai_prices_price(MODEL)
    assert (tmp_path / ".niceeval").read_text(encoding="utf-8") == "a file where the folder would be"
    assert [p.name for p in tmp_path.iterdir()] == [".niceeval"]  # no temporary file left behind


def test_an_unreadable_memo_is_no_error(tmp_path: Path) -> None:
    (tmp_path / ".niceeval" / "prices.json").mkdir(parents=True)  # cannot be read, nor replaced by a file
    [price] = _suite(tmp_path, [MODEL])
    assert price == _genai_prices_price(MODEL)
    assert [p.name for p in (tmp_path / ".niceeval").iterdir()] == ["prices.json"]


def test_a_suite_that_prices_nothing_writes_nothing(tmp_path: Path) -> None:
    assert _suite(tmp_path, []) == []
    assert not (tmp_path / ".niceeval").exists()


def test_a_memo_is_written_only_when_a_model_was_new(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _suite(tmp_path, [MODEL])
    memo = tmp_path / ".niceeval" / "prices.json"
    memo.write_text(memo.read_text(encoding="utf-8") + " ", encoding="utf-8")  # a mark a rewrite would drop
    _next_run(tmp_path, monkeypatch)
    find_price(MODEL)
    _pricing.save_price_memo()
    assert memo.read_text(encoding="utf-8").endswith("}\n ")


def test_outside_a_suite_nothing_is_read_or_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write_memo(tmp_path, _price_memo.current_key(_pricing._BUILTIN), {MODEL: FAKE.model_dump()})
    assert find_price(MODEL) == _genai_prices_price(MODEL)
    _pricing.save_price_memo()
    assert _memo(tmp_path)["prices"] == {MODEL: FAKE.model_dump()}
