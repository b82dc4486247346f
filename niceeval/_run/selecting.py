"""select-best across the variants of one case: one judge call over all their outputs, a result for each run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import ErrorInfo, UsageError
from niceeval._core.results import RunResult
from niceeval._eval.compare import Comparison, SelectBest
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, judge_settings
from niceeval._run.judging import SuiteJudges

if TYPE_CHECKING:
    from niceeval.judge._runtime import Choice, Env
    from niceeval.providers import ModelRef


@dataclass(kw_only=True)
class Member:
    """One finished run of a group (the variants of one case at one run index), with the comparisons it registered."""

    entry: EvalEntry
    result: RunResult
    comparisons: list[Comparison]
    added: list[AssertionResult] = field(default_factory=list)
    usage: ErrorInfo | None = None

    @property
    def name(self) -> str:
        return self.entry.variant.name if self.entry.variant is not None else self.entry.id


def _models(member: Member, settings: SelectBest, options: ExecOptions) -> tuple[ModelRef, ModelRef | None]:
    from niceeval.providers import parse_model

    judge = judge_settings(member.entry.spec, options)
    chosen = options.grader or settings.model or judge.model
    if chosen is None:
        raise UsageError(
            "t.select_best(): no judge model. Set judge={'model': 'openai/gpt-5.4-mini'} in define_config() or "
            "define_eval(), pass model='provider/name', or run with --grader MODEL."
        )
    return parse_model(chosen), parse_model(judge.fallback) if judge.fallback else None


def _env(member: Member, options: ExecOptions, judges: SuiteJudges) -> Env:
    from niceeval.judge._runtime import Env
    from niceeval.providers import RetryPolicy

    judge = judge_settings(member.entry.spec, options)
    return Env(
        clients=judges.clients(),
        cache=judges.cache(),
        cache_mode="read_only_strict" if judges.cache_only else "read_write",
        pricing=options.pricing,
        timeout=judge.timeout,
        retry=RetryPolicy(max_retries=judge.max_retries),
        max_chars=judge.max_chars,
    )


def _too_few(taking: list[tuple[Member, Comparison]]) -> None:
    for member, comparison in taking:
        reason = (
            f"select-best compares the variants of a case, and only {len(taking)} ran here "
            "(give the eval variants=..., or select more of them with -k)"
        )
        member.added.append(comparison.result(passed=False, score=0.0, reason=reason, cause="error"))


def _misused(taking: list[tuple[Member, Comparison]], exc: UsageError) -> None:
    for member, comparison in taking:
        message = f"{comparison.location}: {exc}"
        member.usage = member.usage or ErrorInfo(
            type="UsageError", message=message, location=comparison.location, kind="usage"
        )
        member.added.append(comparison.result(passed=False, score=0.0, reason=str(exc), cause="error"))


async def resolve_select_best(taking: list[tuple[Member, Comparison]], options: ExecOptions) -> None:
    """Ask the judge once for the group and give every run that registered the comparison its result."""
    from niceeval.judge._runtime import select_best

    if len(taking) < 2:
        _too_few(taking)
        return
    first_member, first = taking[0]
    settings = first.settings
    assert isinstance(settings, SelectBest)
    try:
        models = _models(first_member, settings, options)
    except UsageError as exc:
        _misused(taking, exc)
        return
    outputs = [c.settings.output if isinstance(c.settings, SelectBest) else "" for _, c in taking]
    seed = f"{first_member.entry.group}\x00{first_member.result.run_index}\x00{settings.criteria}"
    own = options.judges is None
    judges = options.judges or SuiteJudges(options.root, no_cache=True)
    try:
        env = _env(first_member, options, judges)
        choice = await select_best(env, settings.criteria, outputs, models, seed, asked=settings.input)
    finally:
        if own:
            await judges.aclose()
    _record(taking, choice)


def _record(taking: list[tuple[Member, Comparison]], choice: Choice) -> None:
    order = ", ".join(f"{choice.labels[pos]}={taking[index][0].name}" for pos, index in enumerate(choice.shown))
    calls = [c.call for c in choice.consultations]
    last = choice.consultations[-1]
    for index, (member, comparison) in enumerate(taking):
        # The one judge call is recorded (and its spend counted) on the first run only; the others cite it.
        extra = {"judge_calls": calls} if index == 0 else {}
        if choice.picked is None:
            reason = f"judge unavailable: {'; '.join(c.call.reason for c in choice.consultations)}"
            member.added.append(
                comparison.result(
                    passed=True, score=None, reason=reason, state="inconclusive", cause=last.call.cause, **extra
                )
            )
            continue
        winner = taking[choice.picked][0].name
        chosen = choice.picked == index
        verdict = "picked as best" if chosen else f"not picked: the judge picked {winner}"
        reason = f"{verdict} (shown as {choice.label_of(index)}; order shown: {order}): {last.call.reason}"
        reason += f" ({choice.cut})" if choice.cut else ""
        member.added.append(
            comparison.result(passed=chosen, score=1.0 if chosen else 0.0, reason=reason, actual=winner, **extra)
        )
