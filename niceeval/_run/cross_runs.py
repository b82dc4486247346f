"""Resolving max-score and select-best: runs wait here until every variant of their case has run.

The suite hands each finished run to `CrossRuns.finished`. A run that belongs to a group (the variants of one
case, at one run index) is held until the group is complete; then each comparison registered in the group is
resolved over all of its runs, its result is added to every run that registered it, and the runs are re-folded
and released to the tallies and reporters. Runs are planned variant after variant for each case, so groups
complete quickly and only a few are held at once. Runs without a group release at once.
"""

from __future__ import annotations

from collections import Counter

from niceeval._core.errors import ErrorInfo
from niceeval._core.outcome import fold
from niceeval._core.results import RunResult
from niceeval._eval.compare import Comparison, MaxScore, select_max
from niceeval._eval.points import earned, points_rule
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions
from niceeval._run.failures import classified
from niceeval._run.judging import spend_of
from niceeval._run.selecting import Member, resolve_select_best


def _key(comparison: Comparison) -> tuple[str, str | None]:
    return (type(comparison.settings).__name__, comparison.location)


class CrossRuns:
    """Holds grouped runs until their group is complete, then resolves their comparisons."""

    def __init__(self, sizes: Counter[str], options: ExecOptions) -> None:
        """`sizes`: how many variants of each case (a group) are planned."""
        self._sizes = sizes
        self._options = options
        self._waiting: dict[tuple[str, int], list[Member]] = {}

    async def finished(self, entry: EvalEntry, result: RunResult, comparisons: list[Comparison]) -> list[RunResult]:
        """The runs ready for reporting now that `result` is done (none while its group waits for others)."""
        member = Member(entry=entry, result=result, comparisons=comparisons)
        if entry.group is None:
            return await self._resolve([member]) if comparisons else [result]
        key = (entry.group, result.run_index)
        members = self._waiting.setdefault(key, [])
        members.append(member)
        if len(members) < self._sizes[entry.group]:
            return []
        del self._waiting[key]
        members.sort(key=lambda m: m.entry.group_index)
        return await self._resolve(members)

    async def flush(self) -> list[RunResult]:
        """Release groups that never completed (an interrupted suite), resolved over the runs they have."""
        waiting, self._waiting = list(self._waiting.values()), {}
        released: list[RunResult] = []
        for members in waiting:
            members.sort(key=lambda m: m.entry.group_index)
            released.extend(await self._resolve(members))
        return released

    async def _resolve(self, members: list[Member]) -> list[RunResult]:
        if not any(m.comparisons for m in members):
            return [m.result for m in members]
        keys = list(dict.fromkeys(_key(c) for m in members for c in m.comparisons))
        for key in keys:
            taking = [(m, c) for m in members for c in m.comparisons if _key(c) == key]
            first = taking[0][1].settings
            if isinstance(first, MaxScore):
                _resolve_max_score(taking, first)
            else:
                await self._resolve_select_best(taking)
        return [self._refold(m) for m in members]

    async def _resolve_select_best(self, taking: list[tuple[Member, Comparison]]) -> None:

        await resolve_select_best(taking, self._options)

    def _refold(self, member: Member) -> RunResult:
        result = member.result
        assertions = [*result.assertions, *member.added]
        error = result.error or member.usage
        rule = points_rule(member.entry.spec)
        outcome = fold(
            assertions,
            errored=error is not None,
            skipped=result.skip_reason is not None,
            fail_on_inconclusive=self._options.fail_on_inconclusive,
            points_short=rule is not None and rule.short(earned(assertions)),
        )
        refolded = result.model_copy(
            update={
                "assertions": assertions,
                "outcome": outcome,
                "error": error,
                "judge_spend": spend_of(assertions),
                "failure": None,
            }
        )
        return classified(refolded, self._options.classify_failure)  # the comparison may have failed the run


def _resolve_max_score(taking: list[tuple[Member, Comparison]], settings: MaxScore) -> None:
    selection = select_max(settings, [m.result.assertions for m, _ in taking])
    shown = ", ".join(
        f"{m.name} {'-' if value is None else f'{value:.3f}'}"
        for (m, _), value in zip(taking, selection.aggregates, strict=True)
    )
    how = f"{settings.method} of the other assertions' weighted scores"
    if all(value is None for value in selection.aggregates):
        for member, comparison in taking:
            message = (
                f"t.max_score() at {comparison.location} has nothing to aggregate: no other assertion of this eval "
                "has a score; add checks (or judges) for it to compare"
            )
            member.usage = member.usage or ErrorInfo(
                type="UsageError", message=message, location=comparison.location, kind="usage"
            )
            member.added.append(comparison.result(passed=False, score=0.0, reason=message, cause="error"))
        return
    for index, ((member, comparison), value) in enumerate(zip(taking, selection.aggregates, strict=True)):
        chosen = selection.selected == index
        if selection.selected is None:
            verdict = f"none selected: no aggregate reached the threshold {settings.threshold:g}"
        elif chosen:
            verdict = "selected (highest aggregate)"
        else:
            verdict = f"not selected ({taking[selection.selected][0].name} scored higher or tied first)"
        mine = "nothing to aggregate" if value is None else f"{value:.3f}"
        floor = f" >= {settings.threshold:g}" if settings.threshold is not None else ""
        member.added.append(
            comparison.result(
                passed=chosen,
                score=1.0 if chosen else 0.0,
                reason=f"{verdict}; aggregate ({how}): {shown}",
                expected=f"the highest aggregate{floor}",
                actual=mine,
            )
        )
