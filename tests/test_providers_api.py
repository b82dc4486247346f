"""`niceeval.providers` is one door: these names, and nothing else, are its public face (as httpx pins its own)."""

import types
from pathlib import Path

import niceeval.providers

EXPORTS = [
    "PROVIDERS",
    "AdaptiveLimiter",
    "ModelRef",
    "Provider",
    "ProviderCause",
    "ProviderError",
    "RetryPolicy",
    "anthropic_client",
    "api_key",
    "base_url",
    "call",
    "chat_completion",
    "classify",
    "cost_of",
    "find_price",
    "limiter_for",
    "openai_client",
    "parse_model",
    "prices_loaded",
    "prices_ready",
    "release",
    "save_price_memo",
    "sdk_ready",
    "shared_clients",
    "shared_resource",
    "use_price_memo",
]


def test_providers_exports_exactly_these_names() -> None:
    assert sorted(niceeval.providers.__all__) == sorted(EXPORTS)


def test_every_exported_name_exists() -> None:
    missing = [name for name in niceeval.providers.__all__ if not hasattr(niceeval.providers, name)]
    assert missing == []


def test_no_public_name_is_left_out_of_all() -> None:
    public = {
        name
        for name, value in vars(niceeval.providers).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(niceeval.providers.__all__)


def test_every_module_behind_the_door_is_private() -> None:
    folder = Path(niceeval.providers.__file__).parent
    public = [path.name for path in folder.glob("*.py") if not path.name.startswith("_")]
    assert public == []
