"""Alarms that stay valid however long the watcher watches: `niceeval watch --alarm "rubric:helpful>=0.8"`.

Each rule watches one assertion's scores (its name or kind, in one online eval or all) against a reference:

- a target mean (`>=0.8`);
- a window: the rule's first N scores of this watch (`>=window:1000`), the mean the rest must keep;
- a stored suite run (`>=ref`, with `--reference RUN_ID`): that run's scores of the same assertion.

The test is `niceeval.stats`' sequential one (`DriftMonitor`: a mixture of betting martingales with fresh starts,
valid under continuous monitoring). A reference is itself a sample, so its alpha is split: the rule compares the
stream with the reference's lower confidence bound at `alpha / 2`, by a monitor at `alpha / 2`. If the stream keeps
the reference's true mean, a false alarm needs the bound to be above that mean (chance <= alpha/2) or the monitor
to fire on a stream at or above its target (chance <= alpha/2): at most alpha in all, however long the watch.
When the evidence reaches its threshold the alarm fires with the evidence, once per rule and session.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from niceeval._core.assertion import assertion_kind
from niceeval._core.results import RunResult
from niceeval.stats import DriftMonitor, mean_lower_bound

PASS = "pass"
"""The selector of an online eval's own verdict: 1 when the run passed, 0 when it did not (errored runs left out)."""
STORED = "ref"
"""The reference of a rule compared with the stored suite run of `--reference`."""
_RULE = re.compile(r"^\s*(?P<selector>[^<>=]+?)\s*>=\s*(?P<reference>\S+)\s*$")
_WINDOW = re.compile(r"^window:(?P<size>[0-9_,]+)$")


@dataclass(frozen=True, slots=True)
class Target:
    """A fixed mean the scores should keep."""

    rate: float


@dataclass(frozen=True, slots=True)
class Window:
    """The rule's first `size` scores of the watch: the mean the later ones should keep."""

    size: int


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A stored suite run's scores of the rule's assertion: the mean the stream should keep."""

    run_id: str
    scores: tuple[float, ...]


Reference = Target | Window | StoredRun


@dataclass(frozen=True, kw_only=True, slots=True)
class AlarmRule:
    """One `--alarm`: the scores of `assertion` (a name or kind; `pass`: the run's verdict) in online eval
    `eval_name` (all online evals when None) should keep a mean of at least `reference`'s."""

    text: str
    assertion: str
    eval_name: str | None
    reference: Reference
    alpha: float = 0.05

    def scores(self, result: RunResult) -> list[float]:
        """The scores this rule reads from one result (none when the result is not its eval's)."""
        return selected_scores(self.assertion, self.eval_name, result)


def selected_scores(assertion: str, eval_name: str | None, result: RunResult) -> list[float]:
    """The scores of `assertion` (a name or kind; `pass`: the run's verdict) in `result` when it is a result of
    eval `eval_name` (any eval when None); inconclusive assertions and errored runs have none."""
    if eval_name is not None and eval_name not in (result.eval_id, result.eval_id.rpartition("::")[2]):
        return []
    if assertion == PASS:
        return [] if result.error is not None else [1.0 if result.outcome == "passed" else 0.0]
    return [
        a.score
        for a in result.assertions
        if a.score is not None and a.state != "inconclusive" and assertion in (a.name, assertion_kind(a.name))
    ]


def alarm_syntax(text: str) -> tuple[str, str | None, Target | Window | None]:
    """The selector (assertion, eval) and reference of `ASSERTION[:EVAL]>=REFERENCE`; None for `ref`.

    Raises:
        ValueError: The text is not in that form, or its reference is none of a target in (0, 1), `window:N`, `ref`.
    """
    found = _RULE.match(text)
    if found is None:
        raise ValueError(
            f"--alarm {text!r}: write ASSERTION[:EVAL]>=REFERENCE, e.g. 'rubric:helpful>=0.8' (the rubric scores of "
            "online eval helpful keep a mean of at least 0.8), 'pass>=window:1000' (every online eval's pass rate "
            "keeps that of its first 1,000 runs) or 'pass>=ref' (keeps that of the suite run of --reference RUN_ID)"
        )
    assertion, _, eval_name = found.group("selector").partition(":")
    selector = (assertion.strip(), eval_name.strip() or None)
    reference = found.group("reference")
    if reference == STORED:
        return (*selector, None)
    window = _WINDOW.match(reference)
    if window is not None:
        size = int(window.group("size").replace(",", "").replace("_", "") or 0)
        if size < 1:
            raise ValueError(f"--alarm {text!r}: a window holds at least one score, e.g. window:1000")
        return (*selector, Window(size))
    try:
        rate = float(reference)
    except ValueError:
        rate = -1.0
    if not 0 < rate < 1:
        raise ValueError(
            f"--alarm {text!r}: the reference is a mean score above 0 and below 1 (e.g. 0.8), window:N (the first "
            "N scores of the watch) or ref (the suite run of --reference RUN_ID)"
        )
    return (*selector, Target(rate))


def parse_alarm(text: str, *, alpha: float = 0.05, stored: tuple[str, Sequence[RunResult]] | None = None) -> AlarmRule:
    """`ASSERTION[:EVAL]>=REFERENCE` read as a rule; `stored` is `--reference`'s run id and results (for `ref`).

    Raises:
        ValueError: The text is not a rule (`alarm_syntax`), or it says `ref` and there is no reference run or the
            run holds no score of the rule's assertion.
    """
    assertion, eval_name, given = alarm_syntax(text)
    reference: Reference
    if given is not None:
        reference = given
    else:
        if stored is None:
            raise ValueError(f"--alarm {text!r}: 'ref' compares with a stored suite run: pass --reference RUN_ID")
        run_id, results = stored
        scores = tuple(score for result in results for score in selected_scores(assertion, eval_name, result))
        if not scores:
            where = f"eval {eval_name!r}" if eval_name else "any eval"
            raise ValueError(
                f"--alarm {text!r}: the reference run {run_id} holds no score of {assertion!r} in {where}: name an "
                "assertion (or kind) and eval that run scored, or pass another --reference"
            )
        reference = StoredRun(run_id, scores)
    return AlarmRule(text=text.strip(), assertion=assertion, eval_name=eval_name, reference=reference, alpha=alpha)


def described(reference: Reference) -> str:
    """What a rule compares with, in words (said when the watch starts)."""
    if isinstance(reference, Target):
        return f"the target {reference.rate:g}"
    if isinstance(reference, Window):
        return f"its first {reference.size:,} score(s) of this watch"
    mean = sum(reference.scores) / len(reference.scores)
    return f"suite run {reference.run_id} (mean {mean:.3f} over {len(reference.scores):,} score(s))"


class RuleMonitor:
    """One rule's test: its monitor (none while a window fills) and how its reference reads."""

    def __init__(self, rule: AlarmRule) -> None:
        self.rule = rule
        self.monitor: DriftMonitor | None = None
        self.described = ""
        self._window: list[float] = []
        reference = rule.reference
        if isinstance(reference, Target):
            self.monitor = DriftMonitor(reference.rate, rule.alpha)
            self.described = f"the target {reference.rate:g}"
        elif isinstance(reference, StoredRun):
            self._against(reference.scores, f"suite run {reference.run_id}")

    def update(self, score: float, result: RunResult) -> Alarm | None:
        """Count `score`, read from `result`; the alarm when it fires now."""
        monitor = self.monitor
        if monitor is None:
            self._window.append(score)
            if isinstance(self.rule.reference, Window) and len(self._window) == self.rule.reference.size:
                self._against(self._window, "the first scores of this watch")
                self._window = []
            return None
        if not monitor.update(score):
            return None
        return Alarm(
            rule=self.rule.text,
            reference=self.described,
            target=monitor.target,
            alpha=self.rule.alpha,
            threshold=1 / monitor.alpha,
            mean=monitor.mean,
            scores=monitor.count,
            e_value=math.exp(min(monitor.log_evidence, 700.0)),
            eval_id=result.eval_id,
            trace_id=result.case_id,
        )

    def _against(self, scores: Sequence[float], source: str) -> None:
        half = self.rule.alpha / 2
        bound = mean_lower_bound(scores, half)
        self.monitor = DriftMonitor(bound, half)
        self.described = (
            f"{source} (mean {sum(scores) / len(scores):.3f} over {len(scores):,} score(s), lower bound {bound:.3f} "
            "at alpha/2)"
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Alarm:
    """A rule whose evidence reached its threshold: what it saw, against which reference, and on which trace."""

    rule: str
    reference: str
    target: float
    alpha: float
    threshold: float
    mean: float
    scores: int
    e_value: float
    eval_id: str
    trace_id: str | None

    def message(self) -> str:
        return (
            f"ALARM {self.rule}: the mean is {self.mean:.3f} over {self.scores:,} score(s), below {self.reference}, "
            f"with evidence e = {self.e_value:,.1f} >= {self.threshold:g} (anytime-valid: a false alarm has chance "
            f"<= {self.alpha:g} however long the watch); the trace that tipped it: {self.trace_id} ({self.eval_id})"
        )

    def evidence(self) -> dict[str, Any]:
        """The alarm as data (the hook's `NICEEVAL_ALARM` and standard input)."""
        return {
            "rule": self.rule,
            "reference": self.reference,
            "target": self.target,
            "alpha": self.alpha,
            "threshold": self.threshold,
            "mean": self.mean,
            "scores": self.scores,
            "e_value": self.e_value,
            "eval_id": self.eval_id,
            "trace_id": self.trace_id,
        }


class Alarms:
    """Every rule's test; `observe` each online result, get the alarms it fired (each rule fires once)."""

    def __init__(self, rules: list[AlarmRule]) -> None:
        self.rules = rules
        self._monitors = [RuleMonitor(rule) for rule in rules]
        self.fired: list[Alarm] = []

    def observe(self, result: RunResult) -> list[Alarm]:
        fired = []
        done = {alarm.rule for alarm in self.fired}
        for rule, watched in zip(self.rules, self._monitors, strict=True):
            if rule.text in done:
                continue
            for score in rule.scores(result):
                alarm = watched.update(score, result)
                if alarm is not None:
                    fired.append(alarm)
                    break
        self.fired.extend(fired)
        return fired
