"""The judge around runs, made only when an eval uses `t.judge`.

A suite shares one set of SDK clients and one verdict cache (`SuiteJudges`); each run's context is given a
`JudgeSlot`, which it opens on the first `t.judge` access. Evals that never judge import nothing from `niceeval.judge`,
open no client and touch no cache file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from niceeval._core.assertion import AssertionResult
from niceeval._core.results import Spend
from niceeval._core.settings import JudgeSettings, Price
from niceeval._eval.context import JudgeView

if TYPE_CHECKING:
    from niceeval._run.discovery import EvalEntry
    from niceeval.judge import Judge
    from niceeval.judge._runtime import CallGate, JudgeCache, JudgeClients, JudgeSession
    from niceeval.simulation import UserModel


def judging_modules(entries: Iterable[EvalEntry]) -> tuple[str, ...]:
    """What to load off the loop before a suite whose eval functions use `t.judge` (read from their code; a
    case's `assert:` entries may ask the judge through `t.check_case()`)."""
    uses = any({"judge", "check_case"} & set(entry.spec.fn.__code__.co_names) for entry in entries)
    return ("niceeval.judge",) if uses else ()


class SuiteJudges:
    """The SDK clients and verdict cache every run's judge shares; each made on first use, closed by `aclose`."""

    def __init__(
        self, root: Path, *, no_cache: bool = False, cache_only: bool = False, gate: CallGate | None = None
    ) -> None:
        self.root = root
        self.no_cache = no_cache
        self.cache_only = cache_only
        self.gate = gate
        self._clients: JudgeClients | None = None
        self._cache: JudgeCache | None = None

    def clients(self) -> JudgeClients:
        if self._clients is None:
            from niceeval.judge._runtime import JudgeClients

            self._clients = JudgeClients(gate=self.gate)
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
    """One run's judge: the run's context opens it (`open`) on the eval's first `t.judge`; `results()` after the run.

    Args:
        suite: The suite's clients and cache.
        settings: The eval's judge settings (merged).
        grader: `--grader MODEL`, which overrides every judge model.
        pricing: The config's price overrides.
        run_index: Which run of the eval: repeats after the first write fresh verdicts instead of reading them.
    """

    def __init__(
        self,
        suite: SuiteJudges,
        *,
        settings: JudgeSettings,
        grader: str | None,
        pricing: Mapping[str, Price],
        run_index: int = 0,
    ) -> None:
        self._suite = suite
        self._settings = settings
        self._grader = grader
        self._pricing = pricing
        self._run_index = run_index
        self._session: JudgeSession | None = None

    def open(self, view: JudgeView) -> Judge:
        """The run's judge, reading the run through `view` (the context asks once, on first use)."""
        from niceeval.judge._runtime import CacheMode, JudgeRuntime, JudgeSession
        from niceeval.providers import RetryPolicy

        suite = self._suite
        mode: CacheMode = "read_only_strict" if suite.cache_only else "write_only" if self._run_index else "read_write"
        self._session = JudgeSession(
            JudgeRuntime(
                settings=self._settings,
                grader=self._grader,
                clients=suite.clients(),
                start=view.start,
                reply=view.reply,
                asked=view.asked,
                transcript=view.transcript,
                variables=view.variables,
                pricing=self._pricing,
                cache=suite.cache(),
                cache_mode=mode,
                retry=RetryPolicy(max_retries=self._settings.max_retries),
            )
        )
        return self._session.judge

    def user_model(self, model: str | None) -> UserModel:
        """The model that plays `t.simulate`'s users: `model`, else `--grader`, else the judge's model.

        Its turns share the judges' clients and cache file; the run's index is the default seed, so `--runs N`
        samples N conversations and a rerun replays each.

        Raises:
            UsageError: No model is configured anywhere.
        """
        from niceeval._core.errors import UsageError
        from niceeval.providers import RetryPolicy
        from niceeval.simulation import UserModel

        chosen = model or self._grader or self._settings.model
        if chosen is None:
            raise UsageError(
                "t.simulate() needs a user model: pass model='openai/...', set "
                "define_config(judge={'model': 'openai/...'}) or pass --grader."
            )
        suite = self._suite
        return UserModel(
            model=chosen,
            clients=suite.clients(),
            cache=suite.cache(),
            cache_only=suite.cache_only,
            seed=self._run_index,
            timeout=self._settings.timeout,
            retry=RetryPolicy(max_retries=self._settings.max_retries),
        )

    def results(self) -> list[AssertionResult]:
        """The judge verdicts, once the run's task group has finished (none when the eval never judged)."""
        return self._session.results() if self._session is not None else []


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
