"""One structured judge request over the official SDKs, and the SDK clients shared by a suite's judge calls.

Structured output is forced on both providers: OpenAI gets `response_format` with a strict JSON schema,
Anthropic gets the schema as the input of a tool it is forced to call (`tool_choice`). Every request goes
through `providers.call`, which retries 429 / 5xx / timeouts (honouring `Retry-After`) under the provider's
limiter shared with agents, and raises `ProviderError` with a cause once retries are spent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, cast

from niceeval import providers
from niceeval.providers import ModelRef, RetryPolicy

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import Message
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

Messages = list[dict[str, str]]
TOOL_NAME = "record_verdict"
ANTHROPIC_MAX_TOKENS = 2048
"""Room for a g_eval chain of thought; judges answer far shorter in practice."""


class CallRefused(providers.ProviderError):
    """A judge call a `CallGate` did not let start: it never left, so it is not a call made (nor spent)."""


class CallGate(Protocol):
    """What admits each judge request just before it is sent (the watcher's judge budget)."""

    def admit(self, provider: providers.Provider) -> None:
        """Let one request to `provider` start (counted as it starts), or raise `CallRefused` with the reason."""
        ...


class JudgeClients:
    """The SDK clients a suite's judge calls share, built on first use and closed with `aclose()`.

    Create one per suite (`async with JudgeClients() as clients:`) inside the suite's event loop. Keys and base
    URLs come from the arguments, else from `OPENAI_API_KEY` / `OPENAI_BASE_URL` and `ANTHROPIC_API_KEY` /
    `ANTHROPIC_BASE_URL`. A missing key is not an error until a judge needs that provider; the judge's result is
    then inconclusive with cause `no_api_key`.

    Args:
        keys: API keys by provider (`{"openai": "sk-..."}`), overriding the environment.
        base_urls: Base URLs by provider, overriding the environment (e.g. a local test server).
        gate: What must admit each request before it is sent (None: every request is sent).
    """

    def __init__(
        self,
        *,
        keys: Mapping[str, str] | None = None,
        base_urls: Mapping[str, str] | None = None,
        gate: CallGate | None = None,
    ) -> None:
        self._keys = dict(keys or {})
        self._urls = dict(base_urls or {})
        self._gate = gate
        self._openai: AsyncOpenAI | None = None
        self._anthropic: AsyncAnthropic | None = None

    async def ready(self, provider: providers.Provider) -> None:
        """Load the provider's SDK off the event loop; `ProviderError("no_api_key")` first when there is no key,
        then `CallRefused` when the gate does not admit the request (asked last, once nothing but the send is left:
        an admitted request is counted even while it waits on the provider's limiter)."""
        providers.api_key(provider, self._keys.get(provider))
        await providers.sdk_ready(provider)
        if self._gate is not None:
            self._gate.admit(provider)

    def openai(self) -> AsyncOpenAI:
        """The OpenAI client; raises `ProviderError("no_api_key")` when there is no key."""
        if self._openai is None:
            self._openai = providers.openai_client(key=self._keys.get("openai"), url=self._urls.get("openai"))
        return self._openai

    def anthropic(self) -> AsyncAnthropic:
        """The Anthropic client; raises `ProviderError("no_api_key")` when there is no key."""
        if self._anthropic is None:
            self._anthropic = providers.anthropic_client(
                key=self._keys.get("anthropic"), url=self._urls.get("anthropic")
            )
        return self._anthropic

    async def aclose(self) -> None:
        """Give back the clients built so far (closed unless the suite's client scope shares them)."""
        openai_client, anthropic_client = self._openai, self._anthropic
        self._openai = self._anthropic = None
        if openai_client is not None:
            await providers.release(openai_client)
        if anthropic_client is not None:
            await providers.release(anthropic_client)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


@dataclass(frozen=True, slots=True)
class ModelAnswer:
    """What the model answered, decoded as far as possible, and what it cost in tokens."""

    text: str
    """The answer as text (the JSON the model wrote), as recorded and as sent back in a repair turn."""
    data: object
    """The decoded JSON answer; `None` when it could not be decoded (see `error`)."""
    error: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Request:
    """One structured request: which model, what to send, the answer schema, the limits."""

    ref: ModelRef
    messages: Messages
    schema: dict[str, Any]
    timeout: float
    retry: RetryPolicy


async def ask(clients: JudgeClients, request: Request) -> ModelAnswer:
    """Send one judge request, retried by `providers.call`.

    Raises:
        ProviderError: No key, or the provider still failed after retries (cause says which).
    """
    await clients.ready(request.ref.provider)
    if request.ref.provider == "openai":
        return await _ask_openai(clients.openai(), request)
    return await _ask_anthropic(clients.anthropic(), request)


async def embed_similarity(clients: JudgeClients, request: Request) -> ModelAnswer:
    """Embed the request's two texts (OpenAI-compatible `/embeddings`) and answer their cosine similarity.

    Raises:
        ProviderError: No key, or the provider still failed after retries.
    """
    import math

    await clients.ready("openai")
    client = clients.openai()
    texts = [message["content"] for message in request.messages]

    async def send() -> Any:
        return await client.embeddings.create(model=request.ref.name, input=texts, timeout=request.timeout)

    response = await providers.call(request.ref, send, policy=request.retry, timeout=request.timeout)
    first, second = (item.embedding for item in sorted(response.data, key=lambda item: item.index))
    norms = math.sqrt(sum(x * x for x in first)) * math.sqrt(sum(y * y for y in second))
    cosine = sum(x * y for x, y in zip(first, second, strict=True)) / norms if norms else 0.0
    tokens = response.usage.prompt_tokens if response.usage else 0
    return ModelAnswer(f'{{"cosine": {cosine}}}', {"cosine": cosine}, None, tokens, 0, 0)


async def _ask_openai(client: AsyncOpenAI, request: Request) -> ModelAnswer:
    body = {
        "model": request.ref.name,
        "messages": request.messages,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "strict": True, "schema": request.schema},
        },
    }

    async def send() -> ChatCompletion:
        return await providers.chat_completion(client, body, timeout=request.timeout)

    completion = await providers.call(request.ref, send, policy=request.retry, timeout=request.timeout)
    usage = completion.usage
    prompt = usage.prompt_tokens if usage else 0
    details = usage.prompt_tokens_details if usage else None
    cached = (details.cached_tokens or 0) if details else 0
    tokens = (prompt - cached, usage.completion_tokens if usage else 0, cached)
    message = completion.choices[0].message if completion.choices else None
    if message is None or message.refusal:
        refusal = message.refusal if message else "no choices in the completion"
        return ModelAnswer(refusal or "", None, f"the model refused: {refusal}", *tokens)
    return _decode(message.content or "", *tokens)


async def _ask_anthropic(client: AsyncAnthropic, request: Request) -> ModelAnswer:
    from anthropic.types import MessageParam

    system = request.messages[0]["content"]
    turns = cast("list[MessageParam]", request.messages[1:])

    async def send() -> Message:
        return await client.messages.create(
            model=request.ref.name,
            max_tokens=ANTHROPIC_MAX_TOKENS,
            system=system,
            messages=turns,
            tools=[{"name": TOOL_NAME, "description": "Record your verdict.", "input_schema": request.schema}],
            tool_choice={"type": "tool", "name": TOOL_NAME},
            timeout=request.timeout,
        )

    message = await providers.call(request.ref, send, policy=request.retry, timeout=request.timeout)
    usage = message.usage
    tokens = (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens or 0)
    for block in message.content:
        if block.type == "tool_use" and block.name == TOOL_NAME:
            return ModelAnswer(json.dumps(block.input, ensure_ascii=False), block.input, None, *tokens)
    text = "".join(block.text for block in message.content if block.type == "text")
    return _decode(text, *tokens)


def _decode(text: str, input_tokens: int, output_tokens: int, cache_read_tokens: int) -> ModelAnswer:
    try:
        data: object = json.loads(text)
    except json.JSONDecodeError as exc:
        error = f"the answer is not valid JSON ({exc.msg} at character {exc.pos})"
        return ModelAnswer(text, None, error, input_tokens, output_tokens, cache_read_tokens)
    return ModelAnswer(text, data, None, input_tokens, output_tokens, cache_read_tokens)
