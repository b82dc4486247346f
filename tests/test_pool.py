"""The shared clients' split transport: small pools filled in turn, every slot given back, proxies respected."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from niceeval.providers import openai_client, release, shared_clients
from niceeval.providers._pool import SplitTransport, proxied
from niceeval.testing import Fault, LLMServer

pytestmark = pytest.mark.anyio
LIMITS = httpx2.Limits(max_connections=100, max_keepalive_connections=10)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_requests_fill_pools_of_eight_in_turn_and_give_every_slot_back(llm_server: LLMServer) -> None:
    llm_server.set_script(lambda request: "ok")
    llm_server.latency = 0.3
    transport = SplitTransport(LIMITS)
    seen: list[list[int]] = []
    async with httpx2.AsyncClient(transport=transport, base_url=llm_server.base_url) as http:

        async def ask() -> None:
            response = await http.post("/chat/completions", json=BODY)
            assert response.json()["choices"][0]["message"]["content"] == "ok"

        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(ask)
            await anyio.sleep(0.15)  # all 20 are waiting on the server
            seen.append(transport.in_flight)
        seen.append(transport.in_flight)
        await ask()  # the first pool has room again: it takes the next request
        seen.append(transport.in_flight)
    assert seen == [[8, 8, 4], [0, 0, 0], [0, 0, 0]]
    assert len(llm_server.requests) == 21


async def test_a_stream_closed_early_and_a_failed_request_give_their_slot_back(llm_server: LLMServer) -> None:
    llm_server.set_script(lambda request: "x" * 5000)
    transport = SplitTransport(LIMITS)
    async with httpx2.AsyncClient(transport=transport, base_url=llm_server.base_url) as http:
        async with http.stream("POST", "/chat/completions", json=BODY) as response:
            assert response.status_code == 200
            assert transport.in_flight == [1]
        assert transport.in_flight == [0]
        llm_server.faults = lambda request: Fault.truncated()
        with pytest.raises(httpx2.HTTPError):
            await http.post("/chat/completions", json=BODY)
        assert transport.in_flight == [0]
    refused = SplitTransport(LIMITS)
    async with httpx2.AsyncClient(transport=refused, base_url="http://127.0.0.1:9") as http:
        with pytest.raises(httpx2.ConnectError):
            await http.get("/")
        assert refused.in_flight == [0]


async def test_a_cancelled_request_gives_its_slot_back(llm_server: LLMServer) -> None:
    llm_server.set_script(lambda request: "late")
    llm_server.latency = 5.0
    transport = SplitTransport(LIMITS)
    async with httpx2.AsyncClient(transport=transport, base_url=llm_server.base_url) as http:
        with anyio.move_on_after(0.2):
            await http.post("/chat/completions", json=BODY)
        assert transport.in_flight == [0]


async def test_a_suites_shared_client_splits_and_one_behind_a_proxy_keeps_the_sdk_default(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_server.set_script(lambda request: "shared")
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert not proxied()
    async with shared_clients():
        sdk = openai_client(key="k", url=llm_server.base_url)
        transport = sdk._client._transport  # the SDK's httpx client: the wiring is what this test checks
        assert isinstance(transport, SplitTransport)
        completion = await sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert completion.choices[0].message.content == "shared"
        assert transport.in_flight == [0]
    alone = openai_client(key="k", url=llm_server.base_url)  # outside a suite: one client per call, as the SDK makes
    assert not isinstance(alone._client._transport, SplitTransport)
    await release(alone)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    assert proxied()
    async with shared_clients():
        behind = openai_client(key="k", url=llm_server.base_url)
        assert not isinstance(behind._client._transport, SplitTransport)
