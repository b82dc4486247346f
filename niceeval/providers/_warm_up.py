"""An SDK's first import, made once per process in a worker thread, so it never stalls the event loop."""

from __future__ import annotations

import threading

from niceeval._core.threads import once_off_loop
from niceeval.providers._model_ref import Provider

_READY: set[str] = set()


async def sdk_ready(provider: Provider) -> None:
    """Load `provider`'s SDK in a worker thread, once.

    Await it before `openai_client()` / `anthropic_client()` in a coroutine: the import, and the HTTP stack its
    first client loads, take long enough to stall every eval in flight if they ran on the loop.
    """
    await once_off_loop(f"sdk {provider}", lambda: _warm_up(provider), lambda: provider in _READY)


_WARMING = threading.Lock()


def _warm_up(provider: Provider) -> None:
    # One thread warms up; the others (every eval of a suite asks at once) wait for it instead of each building
    # its own throwaway client (CPU and an SSL context apiece, and the import lock fought over).
    with _WARMING:
        if provider not in _READY:
            _build_throwaway_client(provider)
            _READY.add(provider)
    from niceeval.providers._pricing import load_prices_in_background

    load_prices_in_background()  # calls through this SDK will be priced: the data loads while they are out


def _build_throwaway_client(provider: Provider) -> None:
    # The first client imports the SDK's HTTP transport and the resource niceeval calls, not just the package; not
    # the Responses API's types (the bulk of the SDK's, and nothing of niceeval's sends them) nor a trust store
    # (the suite's real client loads its own).
    if provider == "openai":
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient

        client = AsyncOpenAI(
            api_key="warm-up", base_url="http://127.0.0.1:9", http_client=DefaultAsyncHttpxClient(verify=False)
        )
        _ = client.chat.completions
    else:
        from anthropic import AsyncAnthropic
        from anthropic import DefaultAsyncHttpxClient as AnthropicHttpxClient

        plain = AnthropicHttpxClient(verify=False)
        _ = AsyncAnthropic(api_key="warm-up", base_url="http://127.0.0.1:9", http_client=plain).messages
