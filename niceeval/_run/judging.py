"""The judge around runs: one set of SDK clients and one verdict cache per suite, one `JudgeSession` per run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anyio.abc import TaskGroup

from niceeval._core.assertion import AssertionResult
from niceeval._core.results import Spend
from niceeval._eval.config import JudgeSettings
from niceeval._eval.context import SyncEvalContext, _ContextBase
from niceeval.judge import JudgeCache, JudgeClients, JudgeRuntime, JudgeSession, default_cache_path, judge_spend
from niceeval.judge._cache import CacheMode
from niceeval.providers import RetryPolicy


@dataclass(frozen=True, kw_only=True, slots=True)
class JudgeResources:
    """What every run's judge shares within a suite."""

    clients: JudgeClients
    cache: JudgeCache | None = None
    cache_only: bool = False


@asynccontextmanager
async def judge_resources(root: Path, *, no_cache: bool, cache_only: bool) -> AsyncIterator[JudgeResources]:
    """Open the suite's judge clients and cache (none with `--no-cache`); close both at the end."""
    cache = None if no_cache else JudgeCache(default_cache_path(root))
    try:
        async with JudgeClients() as clients:
            yield JudgeResources(clients=clients, cache=cache, cache_only=cache_only)
    finally:
        if cache is not None:
            await cache.aclose()


def open_session(
    *,
    resources: JudgeResources,
    settings: JudgeSettings,
    grader: str | None,
    pricing: Any,
    run_index: int,
    task_group: TaskGroup,
    ctx: _ContextBase,
) -> JudgeSession:
    """The run's judging, exposed to the eval as `t.judge`."""
    mode: CacheMode = "read_only_strict" if resources.cache_only else "write_only" if run_index else "read_write"
    start: Callable[[Callable[[], Coroutine[Any, Any, None]]], object]
    if isinstance(ctx, SyncEvalContext):
        sync_ctx = ctx

        def start(work: Callable[[], Coroutine[Any, Any, None]]) -> object:
            # A sync eval runs in its own thread: hop into the event loop to start the call.
            return sync_ctx._call_in_loop(_spawn, task_group, work)

    else:
        start = task_group.start_soon
    session = JudgeSession(
        JudgeRuntime(
            settings=settings,
            grader=grader,
            clients=resources.clients,
            start=start,
            reply=lambda: ctx.reply,
            pricing=pricing,
            cache=resources.cache,
            cache_mode=mode,
            retry=RetryPolicy(max_retries=settings.max_retries),
        )
    )
    ctx._judge = session.judge
    return session


async def _spawn(task_group: TaskGroup, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
    task_group.start_soon(work)


def spend_of(results: list[AssertionResult]) -> Spend:
    """The judges' calls recorded in a run's results as a `Spend` (cost `None` when a judge model has no price)."""
    spent = judge_spend(results)
    return Spend(
        calls=spent.calls,
        tokens=spent.input_tokens + spent.output_tokens + spent.cache_read_tokens,
        cost=spent.cost if spent.complete else None,
        cached=spent.cached,
        unpriced=list(spent.unpriced_models),
    )
