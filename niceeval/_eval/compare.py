"""Assertions across the variants of one case: `t.max_score(...)` and `t.select_best(...)`.

They are registered during a run and resolved by the runner once every variant's run of the same case (and run
index) has finished, because they compare outputs that do not exist yet when the eval calls them. Each variant's
run then gets its own result: the selected variant passes, the others fail.

`max_score` follows promptfoo's max-score exactly: each output's aggregate is the weighted average (or sum) of
its other assertions' scores (pass/fail ones score 1.0/0.0; inconclusive ones have no score and are left out),
weights per assertion name or kind (default 1); the highest aggregate is selected, ties go to the first variant,
the least bad is selected when all fail, nothing is selected below `threshold`, and nothing to aggregate is an
error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self

from niceeval._core.assertion import AssertionResult, Chainable, Severity, assertion_kind
from niceeval._core.errors import UsageError, caller_location
from niceeval._core.values import head

Method = Literal["average", "sum"]


@dataclass(frozen=True, kw_only=True, slots=True)
class MaxScore:
    """The settings of one `t.max_score(...)`."""

    method: Method = "average"
    weights: Mapping[str, float] = field(default_factory=dict)
    threshold: float | None = None

    def weight(self, result: AssertionResult) -> float:
        """The weight of an assertion: by its exact name, else by its kind, else 1."""
        if result.name in self.weights:
            return float(self.weights[result.name])
        return float(self.weights.get(assertion_kind(result.name), 1.0))

    def aggregate(self, results: Sequence[AssertionResult]) -> float | None:
        """The weighted average (or sum) of the scored results; None when there is nothing to aggregate."""
        scored = [(r.score, self.weight(r)) for r in results if r.score is not None]
        total_weight = sum(weight for _, weight in scored)
        if not scored or total_weight <= 0:
            return None
        total = sum(score * weight for score, weight in scored)
        return total if self.method == "sum" else total / total_weight


@dataclass(frozen=True, kw_only=True, slots=True)
class Selection:
    """The outcome of max-score over one case: each output's aggregate and which one (if any) is selected."""

    aggregates: list[float | None]
    selected: int | None
    """Index of the selected output; None when none reaches the threshold or nothing could be aggregated."""


def select_max(settings: MaxScore, outputs: Sequence[Sequence[AssertionResult]]) -> Selection:
    """Pick the output with the highest aggregate (first wins ties; below `threshold` none is picked)."""
    aggregates = [settings.aggregate(results) for results in outputs]
    best: int | None = None
    for index, value in enumerate(aggregates):
        if value is not None and (best is None or value > (aggregates[best] or 0.0)):
            best = index
    if best is not None and settings.threshold is not None and (aggregates[best] or 0.0) < settings.threshold:
        best = None
    return Selection(aggregates=aggregates, selected=best)


@dataclass(frozen=True, kw_only=True, slots=True)
class SelectBest:
    """The settings of one `t.select_best(...)`, with the output this run offers."""

    criteria: str
    output: str
    model: str | None = None
    input: str | None = None
    """The message last sent with `t.send`, shown to the judge as the input the candidates answer."""


class Comparison(Chainable):
    """A registered comparison across variants. Chain `.gate()`, `.soft()`, `.label(text)`, `.optional()`."""

    __slots__ = ("settings", "name", "severity", "location", "is_optional", "key_id")

    def __init__(self, settings: MaxScore | SelectBest, name: str, severity: Severity, location: str | None) -> None:
        self.settings = settings
        self.name = name
        self.severity: Severity = severity
        self.location = location
        self.is_optional = False
        self.key_id: str | None = None

    def _chained(self, **changes: Any) -> Self:
        if "threshold" in changes:
            raise UsageError(
                f"{self.name}: a comparison has no score threshold (a variant is selected or not); chain .soft() "
                "to make not being selected a soft miss, or .gate() to make it fail the eval."
            )
        for name, value in changes.items():
            setattr(self, name, value)
        return self

    def soft(self) -> Self:
        """Not being selected makes the eval `scored` (red only under --strict)."""
        return self._chained(severity="soft")

    def result(self, *, passed: bool, score: float | None, reason: str, **extra: Any) -> AssertionResult:
        """This comparison's result for one variant's run."""
        state = extra.pop("state", "passed" if passed else "failed")
        return AssertionResult(
            name=self.name,
            severity=self.severity,
            score=score,
            threshold=1.0,
            state=state,
            reason=reason,
            location=self.location,
            optional=self.is_optional,
            key=self.key_id,
            **extra,
        )


def _max_score_settings(method: object, weights: object, threshold: object, where: str) -> MaxScore:
    if method not in ("average", "sum"):
        raise UsageError(f"{where}: method is 'average' (the default) or 'sum', got {method!r}.")
    weights = weights or {}
    if not isinstance(weights, Mapping) or not all(
        isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
        for k, v in weights.items()
    ):
        raise UsageError(f"{where}: weights maps assertion names or kinds to numbers >= 0, e.g. {{'includes': 3}}.")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, int | float)):
        raise UsageError(f"{where}: threshold is a number (the least aggregate score to select), got {threshold!r}.")
    return MaxScore(
        method=method,
        weights=dict(weights),
        threshold=float(threshold) if threshold is not None else None,
    )


class Comparisons:
    """The context's part for assertions that compare this run's output with the other variants'.

    Args:
        comparisons: Where they are registered (the runner resolves them once every variant has run).
        reply: The current reply (`t.reply`): what `select_best` compares by default.
        asked: What the eval last sent with `t.send`, shown to the judge as the input the candidates answer.
    """

    __slots__ = ("_comparisons", "_reply", "_asked")

    def __init__(
        self, *, comparisons: list[Comparison], reply: Callable[[], str], asked: Callable[[], str | None]
    ) -> None:
        self._comparisons = comparisons
        self._reply = reply
        self._asked = asked

    def max_score(
        self, *, method: Method = "average", weights: Mapping[str, float] | None = None, threshold: float | None = None
    ) -> Comparison:
        """Among the variants' runs of this case, pass the one whose other assertions score highest.

        Each run's aggregate is the weighted average (`method="average"`) or sum (`"sum"`) of its other
        assertions' scores; pass/fail assertions score 1.0/0.0. Ties go to the first variant; when all runs
        fail the least bad is still selected; with `threshold`, none is selected below it. A gate by default.

        Args:
            method: `"average"` (default) or `"sum"`.
            weights: Weight per assertion name or kind (`{"includes": 3, "rubric": 1}`); 1 by default.
            threshold: The least aggregate a run needs to be selected.
        """
        location = caller_location(1)
        settings = _max_score_settings(method, weights, threshold, f"t.max_score() at {location}")
        return self._add_comparison(Comparison(settings, "max_score", "gate", location))

    def select_best(self, criteria: str, *, on: object = None, model: str | None = None) -> Comparison:
        """Ask the judge which variant's output for this case is best by `criteria`; it passes, the others fail.

        The judge sees every variant's output at once, in an order shuffled per case and run (position bias),
        and its reasoning is kept. Soft by default; inconclusive without a judge (no API key).

        Args:
            criteria: What "best" means, e.g. "Which answer is clearest and correct?".
            on: The value compared; the agent's reply when the method is called by default.
            model: The judge model (`provider/model`), else the eval's or config's judge.
        """
        location = caller_location(1)
        if not isinstance(criteria, str) or not criteria.strip():
            raise UsageError(f"t.select_best() at {location} needs criteria text, e.g. 'Which answer is clearest?'.")
        from niceeval.judge._runtime import as_text

        output = self._reply() if on is None else as_text(on)
        settings = SelectBest(criteria=criteria, output=output, model=model, input=self._asked())
        return self._add_comparison(Comparison(settings, f"select_best({head(criteria, 60)})", "soft", location))

    def _add_comparison(self, comparison: Comparison) -> Comparison:
        self._comparisons.append(comparison)
        return comparison
