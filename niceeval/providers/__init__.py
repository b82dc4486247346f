"""Model strings to SDK clients, resilient calls shared by agents and judges, and prices.

- `parse_model("openai/gpt-5-mini")` -> `ModelRef(provider="openai", name="gpt-5-mini")`; unknown provider prefixes
  fail with the list of known ones.
- `openai_client(...)` / `anthropic_client(...)` build the official async SDK clients (imported lazily), with keys
  and base URLs from arguments or the usual environment variables, so OpenAI-compatible local servers work.
  SDK-level retries are off: `call()` retries itself so it can honour `Retry-After` and adapt concurrency.
- `call(ref, fn, ...)`: runs one provider request under the provider's shared adaptive limiter (agents and judges
  draw from the same one), retrying 429 / 5xx / timeouts / connection errors with exponential backoff and jitter,
  honouring `Retry-After` (no request to that provider starts before it), halving the provider's concurrency once
  per burst of 429s (never below a floor) and growing it back by a quarter after a few successes. Errors
  that remain are raised as `ProviderError` with a `cause` (`rate_limited`, `timeout`, `provider_error`,
  `parse_error`, `no_api_key`) and a message naming the provider and model.
- `find_price(model)` / `cost_of(price, ...)`: the price per million tokens (the config's `pricing=`, then
  genai-prices, then a built-in table; None when nobody knows it, never 0) and the cost of one call.
  `prices_ready()` loads the price data off the event loop; the runner keeps resolved prices per project
  (`use_price_memo`, `save_price_memo`).

This is the package's one door: every other package imports these names, never its private modules.

Design: docs/design/providers.md
"""

from niceeval.providers._call import RetryPolicy, call
from niceeval.providers._clients import (
    anthropic_client,
    api_key,
    base_url,
    chat_completion,
    openai_client,
    release,
    shared_clients,
    shared_resource,
)
from niceeval.providers._errors import ProviderCause, ProviderError, classify
from niceeval.providers._limiter import AdaptiveLimiter, limiter_for
from niceeval.providers._model_ref import PROVIDERS, ModelRef, Provider, parse_model
from niceeval.providers._pricing import (
    cost_of,
    find_price,
    prices_loaded,
    prices_ready,
    save_price_memo,
    use_price_memo,
)
from niceeval.providers._warm_up import sdk_ready

__all__ = [
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
