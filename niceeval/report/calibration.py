"""Judge calibration: how often the judges agree with human labels, per split and per judge model.

Each judge verdict of a labelled case (`expected_label: pass|fail`, `split: golden|holdout`) is compared with its
label: agreement, Cohen's kappa, the confusion matrix (pass is the positive class), and every disagreement with the
judge's reasoning. Inconclusive verdicts (no judge) are counted apart, never as agreement or disagreement. A
holdout agreement more than 10 points under the golden one means the rubric was tuned to the golden cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary

OVERFIT_POINTS = 10.0


@dataclass(frozen=True, kw_only=True, slots=True)
class Label:
    """A case's human label."""

    expected: str
    """`pass` or `fail`."""
    split: str
    """`golden`, `holdout`, or another split name (`unsplit` when the case gives none)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Disagreement:
    """One labelled run whose judge said otherwise than the label."""

    eval_id: str
    judge: str
    expected: str
    said: str
    reason: str


@dataclass(kw_only=True, slots=True)
class Agreement:
    """The verdicts of one judge model on one split."""

    split: str
    model: str
    matrix: dict[tuple[str, str], int] = field(default_factory=dict)
    """(expected, judged) -> count, over `pass`/`fail`."""
    inconclusive: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)

    def count(self, expected: str, judged: str) -> int:
        """How many decided verdicts had this label and this judgement."""
        return self.matrix.get((expected, judged), 0)

    @property
    def decided(self) -> int:
        """How many verdicts were decided (pass or fail), inconclusive ones left out."""
        return sum(self.matrix.values())

    @property
    def agreement(self) -> float | None:
        """Share of decided verdicts that match the label."""
        if not self.decided:
            return None
        return (self.count("pass", "pass") + self.count("fail", "fail")) / self.decided

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa: agreement beyond what the two raters' pass rates give by chance (None if undefined)."""
        n = self.decided
        observed = self.agreement
        if not n or observed is None:
            return None
        label_pass = (self.count("pass", "pass") + self.count("pass", "fail")) / n
        judge_pass = (self.count("pass", "pass") + self.count("fail", "pass")) / n
        chance = label_pass * judge_pass + (1 - label_pass) * (1 - judge_pass)
        if chance >= 1.0:
            return None
        return (observed - chance) / (1 - chance)

    def as_dict(self) -> dict[str, Any]:
        """The agreement as plain JSON-ready data."""
        return {
            "split": self.split,
            "judge": self.model,
            "verdicts": self.decided,
            "inconclusive": self.inconclusive,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "confusion": {f"{e}->{j}": self.count(e, j) for e in ("pass", "fail") for j in ("pass", "fail")},
            "disagreements": [
                {"eval_id": d.eval_id, "expected": d.expected, "judge_said": d.said, "reason": d.reason}
                for d in self.disagreements
            ],
        }


def overfit_warnings(table: Sequence[Agreement]) -> list[str]:
    """One warning per judge model whose holdout agreement is more than 10 points under its golden agreement."""
    by_key = {(a.split, a.model): a for a in table}
    warnings = []
    for (split, model), golden in by_key.items():
        holdout = by_key.get(("holdout", model))
        if split != "golden" or holdout is None or golden.agreement is None or holdout.agreement is None:
            continue
        gap = (golden.agreement - holdout.agreement) * 100
        if gap > OVERFIT_POINTS:
            warnings.append(
                f"{model}: holdout agreement {holdout.agreement:.0%} is {gap:.0f} points under golden "
                f"{golden.agreement:.0%}: the rubric looks overfit to the golden cases; rework it on golden "
                "without reading the holdout cases"
            )
    return warnings


class CalibrationReporter:
    """A sink that compares every judge verdict of a labelled case with its label."""

    def __init__(self, labels: Mapping[str, Label]) -> None:
        self.labels = labels
        self.table: dict[tuple[str, str], Agreement] = {}
        self.errors: list[tuple[str, str]] = []
        """(eval id, error) of labelled runs that crashed: their judges may never have been asked."""

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        """Take the plan and the problems found while loading it."""
        pass

    def run_finished(self, result: RunResult) -> None:
        """Take one finished run."""
        label = self.labels.get(result.eval_id)
        if label is None:
            return
        if result.error is not None:
            self.errors.append((result.eval_id, f"{result.error.type}: {result.error.message}"))
        for assertion in result.assertions:
            if not assertion.judge_calls or assertion.name.startswith("select_best"):
                continue
            model = assertion.judge_calls[-1].model
            row = self.table.get((label.split, model))
            if row is None:
                row = self.table[(label.split, model)] = Agreement(split=label.split, model=model)
            if assertion.state == "inconclusive":
                row.inconclusive += 1
                continue
            said = "pass" if assertion.state == "passed" else "fail"
            row.matrix[(label.expected, said)] = row.matrix.get((label.expected, said), 0) + 1
            if said != label.expected:
                row.disagreements.append(
                    Disagreement(
                        eval_id=result.eval_id,
                        judge=assertion.name,
                        expected=label.expected,
                        said=said,
                        reason=assertion.reason,
                    )
                )

    def finish(self, summary: SuiteSummary) -> None:
        """Finish the report from the suite's summary."""
        pass

    def rows(self) -> list[Agreement]:
        """The table, golden first, then holdout, then other splits."""
        order = {"golden": 0, "holdout": 1}
        return sorted(self.table.values(), key=lambda a: (order.get(a.split, 2), a.split, a.model))


def render(rows: Sequence[Agreement], *, limit: int = 20) -> list[str]:
    """The calibration report as plain lines (the CLI prints them; the console escapes nothing here: callers do)."""
    if not rows:
        return ["no judge verdicts on labelled cases: give cases expected_label (pass|fail) and judge them"]
    lines = []
    for row in rows:
        agreement = "n/a" if row.agreement is None else f"{row.agreement:.0%}"
        kappa = "n/a" if row.kappa is None else f"{row.kappa:.2f}"
        lines.append(
            f"{row.split} · {row.model}: agreement {agreement} over {row.decided} verdicts, kappa {kappa}"
            + (f", {row.inconclusive} inconclusive" if row.inconclusive else "")
        )
        lines.append("                label pass  label fail")
        lines.append(f"  judge pass    {row.count('pass', 'pass'):>10}  {row.count('fail', 'pass'):>10}")
        lines.append(f"  judge fail    {row.count('pass', 'fail'):>10}  {row.count('fail', 'fail'):>10}")
        for d in row.disagreements[:limit]:
            lines.append(f"  ✗ {d.eval_id}: labelled {d.expected}, judge said {d.said}: {d.reason}")
        if len(row.disagreements) > limit:
            lines.append(f"  ... {len(row.disagreements) - limit} more disagreements (see --json)")
    return lines
