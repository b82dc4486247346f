"""Helpers of the judge tests: a minimal stand-in for the runner (a real anyio task group, a `JudgeSession`, the
real SDKs against the local server) and scripted structured answers."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from niceeval._core.assertion import AssertionResult
from niceeval._core.settings import JudgeSettings, Price
from niceeval.judge import Judge
from niceeval.judge._runtime import CacheMode, JudgeCache, JudgeClients, JudgeRuntime, JudgeSession
from niceeval.providers import RetryPolicy
from niceeval.testing import LLMRequest, LLMServer, Reply, TokenUsage, ToolCall

FAST = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.01)
OPENAI = "openai/gpt-4o-mini"
ANTHROPIC = "anthropic/claude-haiku-4-5"
PROVIDER_MODELS = [OPENAI, ANTHROPIC]


def answer(request: LLMRequest, data: dict[str, Any], usage: TokenUsage | None = None) -> Reply:
    """A structured answer the way each provider gives it: JSON text (OpenAI), a forced tool call (Anthropic)."""
    if request.provider == "anthropic":
        return Reply(tool_calls=[ToolCall(name="record_verdict", arguments=data)], usage=usage)
    return Reply(data=data, usage=usage)


def always(data: dict[str, Any]) -> Callable[[LLMRequest], Reply]:
    """A script answering every request with `data`."""
    return lambda request: answer(request, data)


RUBRIC_PASS = {"reason": "polite and on topic", "pass": True, "score": 0.9}


@dataclass(kw_only=True)
class Run:
    """One judged run against the server; `results` once it has finished."""

    server: LLMServer
    settings: Mapping[str, Any] = field(default_factory=lambda: {"model": OPENAI})
    reply: str = "Your refund is on its way."
    asked: str | None = "Where is my refund?"
    """What the eval last sent (`None`: nothing sent yet)."""
    grader: str | None = None
    pricing: Mapping[str, Price] = field(default_factory=dict)
    cache: JudgeCache | None = None
    cache_mode: CacheMode = "read_write"
    retry: RetryPolicy = FAST
    keys: Mapping[str, str] | None = field(default_factory=lambda: {"openai": "test", "anthropic": "test"})
    results: list[AssertionResult] = field(default_factory=list)

    def __call__(self, body: Callable[[Judge], object]) -> list[AssertionResult]:
        """Run `body(t.judge)` (sync or async) in a task group, then collect the verdicts."""
        anyio.run(self._main, body)
        return self.results

    async def _main(self, body: Callable[[Judge], object]) -> None:
        urls = {"openai": self.server.base_url, "anthropic": self.server.anthropic_base_url}
        async with JudgeClients(keys=self.keys, base_urls=urls) as clients:
            raised: Exception | None = None
            async with anyio.create_task_group() as tg:
                session = JudgeSession(self.runtime(clients, tg.start_soon))
                try:
                    outcome = body(session.judge)
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception as exc:  # re-raised as is, not wrapped in the task group's ExceptionGroup
                    raised = exc
                    tg.cancel_scope.cancel()
            self.results = session.results()
        if raised is not None:
            raise raised

    def runtime(
        self, clients: JudgeClients, start: Callable[[Callable[[], Coroutine[Any, Any, None]]], object]
    ) -> JudgeRuntime:
        return JudgeRuntime(
            settings=JudgeSettings(**self.settings),
            clients=clients,
            start=start,
            reply=lambda: self.reply,
            asked=lambda: self.asked,
            grader=self.grader,
            pricing=self.pricing,
            cache=self.cache,
            cache_mode=self.cache_mode,
            retry=self.retry,
        )
