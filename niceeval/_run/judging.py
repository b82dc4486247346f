"""The judge around runs, made only when an eval uses `t.judge`.

A suite shares one set of SDK clients and one verdict cache (`SuiteJudges`); each run gets a `JudgeSlot` whose
session is created on the first `t.judge` access. Evals that never judge import nothing from `niceeval.judge`,
open no client and touch no cache file.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anyio.abc import TaskGroup
from pydantic import BaseModel

from niceeval._core.assertion import AssertionResult
from niceeval._core.events import Event, MessageEvent
from niceeval._core.results import Spend
from niceeval._core.settings import JudgeSettings, Price
from niceeval._eval.context import ContextBase, SyncEvalContext

if TYPE_CHECKING:
    from niceeval._run.discovery import EvalEntry
    from niceeval.judge import Judge
    from niceeval.judge._runtime import JudgeCache, JudgeClients, JudgeSession


def transcript_of(events: Sequence[Event]) -> str:
    """The run's messages as `User: ...` / `Assistant: ...` lines, for the conversation graders."""
    lines = [
        f"{event.role.capitalize()}: {event.text}"
        for event in events
        if isinstance(event, MessageEvent) and event.role in ("user", "assistant")
    ]
    return "\n".join(lines)


def judging_modules(entries: Iterable[EvalEntry]) -> tuple[str, ...]:
    """What to load off the loop before a suite whose eval functions use `t.judge` (read from their code; a
    case's `assert:` entries may ask the judge through `t.check_case()`)."""
    uses = any({"judge", "check_case"} & set(entry.spec.fn.__code__.co_names) for entry in entries)
    return ("niceeval.judge",) if uses else ()


class SuiteJudges:
    """The SDK clients and verdict cache every run's judge shares; each made on first use, closed by `aclose`."""

    def __init__(self, root: Path, *, no_cache: bool = False, cache_only: bool = False) -> None:
        self.root = root
        self.no_cache = no_cache
        self.cache_only = cache_only
        self._clients: JudgeClients | None = None
        self._cache: JudgeCache | None = None

    def clients(self) -> JudgeClients:
        if self._clients is None:
            from niceeval.judge._runtime import JudgeClients

            self._clients = JudgeClients()
        return self._clients

    def cache(self) -> JudgeCache | None:
        if self._cache is None and not self.no_cache:
            from niceeval.judge._runtime import JudgeCache, default_cache_path

            self._cache = JudgeCache(default_cache_path(self.root))
        return self._cache

    async def aclose(self) -> None:
        if self._clients is not None:
            await self._clients.aclose()
        if self._cache is not None:
            await self._cache.aclose()


class JudgeSlot:
    """One run's judge: `attach` gives the context a factory; the session exists once the eval uses `t.judge`."""

    def __init__(
        self, suite: SuiteJudges, *, settings: JudgeSettings, grader: str | None, pricing: Mapping[str, Price]
    ) -> None:
        self._suite = suite
        self._settings = settings
        self._grader = grader
        self._pricing = pricing
        self._session: JudgeSession | None = None

    def attach(self, ctx: ContextBase, task_group: TaskGroup, run_index: int) -> None:
        def make() -> Judge:
            self._session = self._open(ctx, task_group, run_index)
            return self._session.judge

        ctx._judge_factory = make

    def results(self) -> list[AssertionResult]:
        """The judge verdicts, once the run's task group has finished (none when the eval never judged)."""
        return self._session.results() if self._session is not None else []

    def _open(self, ctx: ContextBase, task_group: TaskGroup, run_index: int) -> JudgeSession:
        from niceeval.judge._runtime import CacheMode, JudgeRuntime, JudgeSession
        from niceeval.providers import RetryPolicy

        mode: CacheMode = "read_only_strict" if self._suite.cache_only else "write_only" if run_index else "read_write"
        return JudgeSession(
            JudgeRuntime(
                settings=self._settings,
                grader=self._grader,
                clients=self._suite.clients(),
                start=_starter(ctx, task_group),
                reply=lambda: ctx.reply,
                asked=lambda: ctx._conversation.asked,
                transcript=lambda: transcript_of(ctx.events),
                variables=lambda: template_variables(ctx),
                pricing=self._pricing,
                cache=self._suite.cache(),
                cache_mode=mode,
                retry=RetryPolicy(max_retries=self._settings.max_retries),
            )
        )


Work = Callable[[], Coroutine[Any, Any, None]]


def _starter(ctx: ContextBase, task_group: TaskGroup) -> Callable[[Work], object]:
    """How judge calls start: on the run's task group (from a sync eval's thread, through its portal)."""
    if not isinstance(ctx, SyncEvalContext):
        return task_group.start_soon
    sync_ctx = ctx

    async def spawn(work: Work) -> None:
        task_group.start_soon(work)

    def start(work: Work) -> object:
        return sync_ctx._call_in_loop(spawn, work)

    return start


def template_variables(ctx: ContextBase) -> dict[str, object]:
    """What a rubric template can name: the case's fields, and `input`: the message last sent with `t.send`, or
    before any, the case's own `input` field (a labelled dataset judged with `on=`)."""
    case = ctx._case
    fields = case.model_dump() if isinstance(case, BaseModel) else dict(case) if isinstance(case, Mapping) else {}
    asked = ctx._conversation.asked
    return {**fields, "input": asked if asked is not None else fields.get("input", "")}


def spend_of(results: list[AssertionResult]) -> Spend:
    """The judges' calls recorded in a run's results as a `Spend` (cost `None` when a judge model has no price)."""
    if not any(result.judge_calls for result in results):
        return Spend()
    from niceeval.judge import judge_spend

    spent = judge_spend(results)
    return Spend(
        calls=spent.calls,
        tokens=spent.input_tokens + spent.output_tokens + spent.cache_read_tokens,
        input_tokens=spent.input_tokens,
        output_tokens=spent.output_tokens,
        cache_read_tokens=spent.cache_read_tokens,
        cost=spent.cost if spent.complete else None,
        cached=spent.cached,
        unpriced=list(spent.unpriced_models),
    )
