"""Alarms that stay valid however long the watcher watches: `niceeval watch --alarm "rubric:helpful>=0.8"`.

Each rule watches one assertion's scores (its name or kind, in one online eval or all) against a target mean, with
a test that is valid under continuous monitoring: a mixture of betting martingales (Waudby-Smith and Ramdas, 2023).
For a fixed bet λ in [0, 1/(1-target)), the wealth `Π (1 + λ (target - x_i))` of scores `x_i` in [0, 1] is a
nonnegative supermartingale while the true mean is at least the target; so is the average over a grid of bets.
By Ville's inequality the chance that it EVER reaches `1/alpha` on a stream that keeps its mean at the target is
at most alpha: no peeking penalty, unlike a test repeated every hour. When it does, the alarm fires with the
evidence (the mixture's wealth, the mean, how many scores), once per rule and session.

The wealth is cumulative: a long history at the target slows the detection of a later drop (docs/statistics.md
has the simulation: a 10-point drop after 2,000 traces is found within about 1,000).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from niceeval._core.assertion import assertion_kind
from niceeval._core.results import RunResult

if TYPE_CHECKING:
    import numpy as np

BET_FRACTIONS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64)
"""The bets of the mixture, as fractions of the largest bet the target allows (`1 / (1 - target)`): small bets win
on small drops over long streams, large bets on large drops quickly; the mixture pays log(7) for not choosing."""
PASS = "pass"
"""The selector of an online eval's own verdict: 1 when the run passed, 0 when it did not (errored runs left out)."""
_RULE = re.compile(r"^\s*(?P<selector>[^<>=]+?)\s*>=\s*(?P<target>[0-9.]+)\s*$")


@dataclass(frozen=True, kw_only=True, slots=True)
class AlarmRule:
    """One `--alarm`: the scores of `assertion` (a name or kind; `pass`: the run's verdict) in online eval
    `eval_name` (all online evals when None) should keep a mean of at least `target`."""

    text: str
    assertion: str
    eval_name: str | None
    target: float
    alpha: float = 0.05

    def scores(self, result: RunResult) -> list[float]:
        """The scores this rule reads from one online result (none when the result is not its eval's)."""
        if self.eval_name is not None and self.eval_name not in (result.eval_id, result.eval_id.rpartition("::")[2]):
            return []
        if self.assertion == PASS:
            return [] if result.error is not None else [1.0 if result.outcome == "passed" else 0.0]
        return [
            a.score
            for a in result.assertions
            if a.score is not None and a.state != "inconclusive" and self.assertion in (a.name, assertion_kind(a.name))
        ]


def parse_alarm(text: str, *, alpha: float = 0.05) -> AlarmRule:
    """`ASSERTION[:EVAL]>=TARGET` read as a rule.

    Raises:
        ValueError: The text is not in that form, or the target is not in (0, 1).
    """
    found = _RULE.match(text)
    if found is None:
        raise ValueError(
            f"--alarm {text!r}: write ASSERTION[:EVAL]>=TARGET, e.g. 'rubric:helpful>=0.8' (the rubric scores of "
            "online eval helpful keep a mean of at least 0.8) or 'pass>=0.95' (every online eval's pass rate)"
        )
    assertion, _, eval_name = found.group("selector").partition(":")
    try:
        target = float(found.group("target"))
    except ValueError:
        target = -1.0
    if not 0 < target < 1:
        raise ValueError(f"--alarm {text!r}: the target is a mean score above 0 and below 1, e.g. 0.8")
    return AlarmRule(
        text=text.strip(), assertion=assertion.strip(), eval_name=eval_name.strip() or None, target=target, alpha=alpha
    )


def bets(target: float) -> np.ndarray:
    """The mixture's bets for `target`."""
    import numpy as np

    return np.asarray(BET_FRACTIONS) / (1.0 - target)


def evidence_paths(scores: np.ndarray, target: float) -> np.ndarray:
    """The log of the mixture's wealth after each score, for each stream (rows of `scores`, values in [0, 1])."""
    import numpy as np

    steps = np.log1p(bets(target)[:, None, None] * (target - np.atleast_2d(scores))[None, :, :])
    paths = np.cumsum(steps, axis=2)
    peak = paths.max(axis=0)
    result: np.ndarray = peak + np.log(np.exp(paths - peak).mean(axis=0))
    return result


class DriftMonitor:
    """The anytime-valid test of one rule, fed one score at a time."""

    def __init__(self, target: float, alpha: float) -> None:
        import numpy as np

        self.target = target
        self.alpha = alpha
        self.count = 0
        self.total = 0.0
        self._bets = bets(target)
        self._log_wealth = np.zeros(len(self._bets))

    def update(self, score: float) -> bool:
        """Count `score`; whether the evidence now reaches `1 / alpha`."""
        import numpy as np

        self._log_wealth += np.log1p(self._bets * (self.target - score))
        self.count += 1
        self.total += score
        return self.log_evidence >= math.log(1.0 / self.alpha)

    @property
    def log_evidence(self) -> float:
        """The log of the mixture's wealth (its e-value)."""
        peak = float(self._log_wealth.max())
        return peak + math.log(float(sum(math.exp(w - peak) for w in self._log_wealth)) / len(self._log_wealth))

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan


@dataclass(frozen=True, kw_only=True, slots=True)
class Alarm:
    """A rule whose evidence reached `1 / alpha`: what it saw and on which trace."""

    rule: str
    target: float
    alpha: float
    mean: float
    scores: int
    e_value: float
    eval_id: str
    trace_id: str | None

    def message(self) -> str:
        return (
            f"ALARM {self.rule}: the mean is {self.mean:.3f} over {self.scores:,} score(s), below the target "
            f"{self.target:g} with evidence e = {self.e_value:,.1f} >= 1/alpha = {1 / self.alpha:g} (anytime-valid: "
            f"a false alarm has chance <= {self.alpha:g} however long the watch); the trace that tipped it: "
            f"{self.trace_id} ({self.eval_id})"
        )

    def evidence(self) -> dict[str, Any]:
        """The alarm as data (the hook's `NICEEVAL_ALARM` and standard input)."""
        return {
            "rule": self.rule,
            "target": self.target,
            "alpha": self.alpha,
            "mean": self.mean,
            "scores": self.scores,
            "e_value": self.e_value,
            "eval_id": self.eval_id,
            "trace_id": self.trace_id,
        }


class Alarms:
    """Every rule's monitor; `observe` each online result, get the alarms it fired (each rule fires once)."""

    def __init__(self, rules: list[AlarmRule]) -> None:
        self.rules = rules
        self._monitors = [DriftMonitor(rule.target, rule.alpha) for rule in rules]
        self.fired: list[Alarm] = []

    def observe(self, result: RunResult) -> list[Alarm]:
        fired = []
        done = {alarm.rule for alarm in self.fired}
        for rule, monitor in zip(self.rules, self._monitors, strict=True):
            if rule.text in done:
                continue
            for score in rule.scores(result):
                if monitor.update(score):
                    fired.append(
                        Alarm(
                            rule=rule.text,
                            target=rule.target,
                            alpha=rule.alpha,
                            mean=monitor.mean,
                            scores=monitor.count,
                            e_value=math.exp(min(monitor.log_evidence, 700.0)),
                            eval_id=result.eval_id,
                            trace_id=result.case_id,
                        )
                    )
                    break
        self.fired.extend(fired)
        return fired
