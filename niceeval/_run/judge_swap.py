"""`niceeval judge compare RUN --judge MODEL`: a stored suite run's judge verdicts against a new judge's verdicts on
the same recorded replies.

The command rescores RUN as `niceeval rescore` does (the recorded turns replayed, the agent never called) with
every judge's model replaced by the new one, and stores the rescore. Here each judge assertion of RUN is paired
with the same assertion of the same eval run in the rescore: by its `[key]`, else its name, and its place among
the run's assertions of that name. Per assertion: the verdicts' agreement with its Wilson interval, Cohen's kappa,
the flips each way, and the paired change in mean score (a paired t test over the eval runs, clustered by eval).
A verdict that is inconclusive on either side (a judge that gave no answer) is counted apart, never as agreement.
With labelled cases (`expected_label: pass|fail`, as `niceeval calibrate` reads them), each judge's verdicts are
compared with the labels too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from niceeval._core.assertion import AssertionResult
from niceeval._core.results import RunResult
from niceeval._core.wording import share
from niceeval.stats import Agreement, Comparison

EVERY = "every judge assertion"
"""The name of the row that pools every judge assertion."""


@dataclass(frozen=True, kw_only=True, slots=True)
class VerdictPair:
    """One judge assertion of one eval run: the stored judge's verdict and the new judge's."""

    eval_id: str
    run_index: int
    assertion: str
    """Its `[key]`, else its name."""
    before: AssertionResult
    after: AssertionResult


@dataclass(frozen=True, kw_only=True)
class AssertionAgreement:
    """One judge assertion (or all of them pooled) over the eval runs both judges decided."""

    assertion: str
    agreement: Agreement
    """The stored judge is the first rater: `pass_to_fail` is a verdict the new judge turned to fail."""
    inconclusive: int
    """Pairs left out: a verdict inconclusive on either side."""
    scores: Comparison | None
    """The new judge's score minus the stored one's, paired over the eval runs both scored (None: none did)."""
    before_mean: float | None
    after_mean: float | None
    before_models: tuple[str, ...]
    after_models: tuple[str, ...]

    def describe(self) -> dict[str, Any]:
        rate, scores = self.agreement.rate, self.scores
        return {
            "assertion": self.assertion, "verdicts": self.agreement.items, "inconclusive": self.inconclusive,
            "agreement": rate.value, "agreement_low": rate.low, "agreement_high": rate.high,
            "kappa": self.agreement.kappa, "pass_to_fail": self.agreement.pass_to_fail,
            "fail_to_pass": self.agreement.fail_to_pass, "before_mean_score": self.before_mean,
            "after_mean_score": self.after_mean, "score_change": None if scores is None else scores.difference,
            "score_change_low": None if scores is None else scores.low,
            "score_change_high": None if scores is None else scores.high,
            "score_p_value": None if scores is None else scores.p_value,
            "score_evidence": None if scores is None else str(scores),
            "before_models": list(self.before_models), "after_models": list(self.after_models),
        }  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class LabelAgreement:
    """One judge's verdicts on the labelled cases against the labels (the labels are the first rater)."""

    judge: str
    """`stored` or `new`."""
    models: tuple[str, ...]
    agreement: Agreement
    inconclusive: int

    def describe(self) -> dict[str, Any]:
        rate = self.agreement.rate
        return {
            "judge": self.judge, "models": list(self.models), "verdicts": self.agreement.items,
            "inconclusive": self.inconclusive, "agreement": rate.value, "agreement_low": rate.low,
            "agreement_high": rate.high, "kappa": self.agreement.kappa,
            "label_pass_judge_fail": self.agreement.pass_to_fail, "label_fail_judge_pass": self.agreement.fail_to_pass,
        }  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class JudgeComparison:
    """A stored run's judges against a new judge, per assertion and pooled, and against the labels if any."""

    run_id: str
    rescore_id: str
    judge: str
    assertions: list[AssertionAgreement]
    """One per judge assertion, by name."""
    every: AssertionAgreement
    labels: list[LabelAgreement] = field(default_factory=list)
    """The stored judge's and the new judge's agreement with the labels (empty: no labelled case was judged)."""
    min_agreement: float | None = None

    @property
    def reasons(self) -> list[str]:
        """Why `--min-agreement` fails (empty: it passes, or was not asked): each assertion whose agreement is under
        it, or no verdict both judges decided."""
        if self.min_agreement is None:
            return []
        if not self.every.agreement.items:
            return ["no judge verdict that both judges decided: nothing shows they agree"]
        return [
            f"{row.assertion}: agreement {_percent(row.agreement.rate.value)} is under --min-agreement "
            f"{self.min_agreement:.0%}"
            for row in self.assertions
            if row.agreement.rate.value is not None and row.agreement.rate.value < self.min_agreement - 1e-12
        ]

    def describe(self) -> dict[str, Any]:
        return {
            "run": self.run_id, "rescore": self.rescore_id, "judge": self.judge,
            "assertions": [row.describe() for row in self.assertions], "every": self.every.describe(),
            "labels": [row.describe() for row in self.labels], "min_agreement": self.min_agreement,
            "reasons": self.reasons, "failed": bool(self.reasons),
        }  # fmt: skip


def pair_verdicts(before: Iterable[RunResult], after: Iterable[RunResult]) -> list[VerdictPair]:
    """Each judge assertion of `before` with the same assertion of the same eval run in `after` (an assertion
    judged on one side only is left out: the eval's code changed in between)."""
    rescored = {(r.eval_id, r.run_index): _judged(r) for r in after}
    pairs = []
    for run in before:
        found = rescored.get((run.eval_id, run.run_index), {})
        for key, assertion in _judged(run).items():
            if key in found:
                pairs.append(VerdictPair(eval_id=run.eval_id, run_index=run.run_index, assertion=key[0],
                                         before=assertion, after=found[key]))  # fmt: skip
    return pairs


def compare_judges(
    pairs: list[VerdictPair],
    *,
    run_id: str,
    rescore_id: str,
    judge: str,
    labels: Mapping[str, str] | None = None,
    min_agreement: float | None = None,
) -> JudgeComparison:
    """Agreement per assertion and pooled; with `labels` (eval id -> `pass`/`fail`), each judge against them."""
    names = sorted({p.assertion for p in pairs})
    return JudgeComparison(
        run_id=run_id,
        rescore_id=rescore_id,
        judge=judge,
        assertions=[_assertion(name, [p for p in pairs if p.assertion == name]) for name in names],
        every=_assertion(EVERY, pairs),
        labels=_against_labels(pairs, labels or {}),
        min_agreement=min_agreement,
    )


def _judged(run: RunResult) -> dict[tuple[str, int], AssertionResult]:
    """The run's judge assertions by (name or `[key]`, occurrence of that name)."""
    seen: dict[str, int] = {}
    found = {}
    for assertion in run.assertions:
        if not assertion.judge_calls or assertion.name.startswith("select_best"):
            continue
        name = f"[{assertion.key}]" if assertion.key is not None else assertion.name
        found[(name, seen.get(name, 0))] = assertion
        seen[name] = seen.get(name, 0) + 1
    return found


def _decided(assertion: AssertionResult) -> bool:
    return assertion.state != "inconclusive"


def _passed(assertion: AssertionResult) -> bool:
    return assertion.state == "passed"


def _assertion(name: str, pairs: list[VerdictPair]) -> AssertionAgreement:
    from niceeval.stats import agreement, paired_t

    decided = [p for p in pairs if _decided(p.before) and _decided(p.after)]
    scored = [p for p in pairs if p.before.score is not None and p.after.score is not None]
    old = [p.before.score for p in scored if p.before.score is not None]
    new = [p.after.score for p in scored if p.after.score is not None]
    return AssertionAgreement(
        assertion=name,
        agreement=agreement([_passed(p.before) for p in decided], [_passed(p.after) for p in decided]),
        inconclusive=len(pairs) - len(decided),
        scores=paired_t(old, new, [p.eval_id for p in scored]) if scored else None,
        before_mean=sum(old) / len(old) if old else None,
        after_mean=sum(new) / len(new) if new else None,
        before_models=_models(p.before for p in pairs),
        after_models=_models(p.after for p in pairs),
    )


def _against_labels(pairs: list[VerdictPair], labels: Mapping[str, str]) -> list[LabelAgreement]:
    from niceeval.stats import agreement

    labelled = [p for p in pairs if p.eval_id in labels]
    if not labelled:
        return []
    rows = []
    for judge, side in (("stored", "before"), ("new", "after")):
        verdicts = [(labels[p.eval_id] == "pass", getattr(p, side)) for p in labelled]
        decided = [(label, _passed(verdict)) for label, verdict in verdicts if _decided(verdict)]
        rows.append(
            LabelAgreement(
                judge=judge,
                models=_models(verdict for _, verdict in verdicts),
                agreement=agreement([label for label, _ in decided], [said for _, said in decided]),
                inconclusive=len(verdicts) - len(decided),
            )
        )
    return rows


def _models(assertions: Iterable[AssertionResult]) -> tuple[str, ...]:
    return tuple(sorted({a.judge_calls[-1].model for a in assertions if a.judge_calls}))


def _percent(value: float | None) -> str:
    return "n/a" if value is None else share(value)
