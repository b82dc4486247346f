"""From what the judges answered to a state, score and reason, for the threshold the handle has when it is read.

A ruling is kept raw (the consultations) and settled against a threshold only when the result is built, so
`.at_least(x)` chained on a handle applies whenever it is chained before the run is folded.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from niceeval._core.assertion import Cause, JudgeCall, State
from niceeval._core.values import short
from niceeval.judge._engine import Consultation


@dataclass(frozen=True, slots=True)
class Settled:
    """A ruling read against a threshold."""

    state: State
    score: float | None
    reason: str
    cause: Cause | None = None
    unstable: bool = False
    """Sampled (`samples=K`): the samples' interval straddles the threshold, or their pass flags disagree."""


class Ruling(Protocol):
    """What the judges said, not yet compared with a threshold."""

    @property
    def calls(self) -> list[JudgeCall]:
        """Every model call behind the ruling, in order."""
        ...

    def settle(self, threshold: float | None) -> Settled:
        """The state, score and reason at `threshold` (None: the judge's own pass flag decides)."""
        ...


@dataclass(frozen=True, slots=True)
class SingleRuling:
    """One judge question: the primary model's consultation, then the fallback's if it was needed."""

    consultations: Sequence[Consultation]

    @property
    def calls(self) -> list[JudgeCall]:
        return [c.call for c in self.consultations]

    def settle(self, threshold: float | None) -> Settled:
        primary, last = self.consultations[0], self.consultations[-1]
        if last.parsed is None:
            tried = "; ".join(c.call.reason for c in self.consultations)
            hint = "" if len(self.consultations) > 1 else " (no fallback judge was used)"
            return Settled("inconclusive", None, f"judge unavailable: {tried}{hint}", primary.call.cause)
        parsed = last.parsed
        # promptfoo's rule: without a threshold the judge's pass decides; with one, both must hold. A judge that
        # gives no pass flag always has a threshold (the handle sees to it).
        # Reports say which of the two failed (`AssertionResult.shortfall`); the reason stays the judge's own.
        passed = (threshold is None or parsed.score >= threshold) and parsed.passed is not False
        reason = parsed.reason
        if last is not primary:
            reason = f"{primary.call.reason}; fallback {last.call.model} answered: {reason}"
        return Settled("passed" if passed else "failed", parsed.score, reason)


@dataclass(frozen=True, slots=True)
class SampledRuling:
    """One judge question asked K times (`samples=K`): the score is the samples' mean, with its spread.

    Inconclusive samples are left out and the rest still count; when none answered the verdict is inconclusive.
    With a threshold the verdict passes when the mean reaches it (and most samples did not say pass=false);
    without one (a rubric's pass decides) when most samples passed. It is `unstable` when the mean's 95% t
    interval straddles the threshold, or when the samples' pass decisions disagree.
    """

    samples: Sequence[SingleRuling]

    @property
    def calls(self) -> list[JudgeCall]:
        return [call for sample in self.samples for call in sample.calls]

    def settle(self, threshold: float | None) -> Settled:
        from niceeval.stats import clustered_mean  # lazily: only sampled judges need it

        settled = [sample.settle(threshold) for sample in self.samples]
        answered = [(sample, s) for sample, s in zip(self.samples, settled, strict=True) if s.score is not None]
        total = len(settled)
        lines = "\n".join(f"- sample {i}: {_vote_text(s)}" for i, s in enumerate(settled, start=1))
        if not answered:
            return Settled("inconclusive", None, f"all {total} samples inconclusive\n{lines}", settled[0].cause)
        scores = [s.score for _, s in answered if s.score is not None]
        estimate = clustered_mean(scores, bounds=(0.0, 1.0))
        mean = math.fsum(scores) / len(scores)
        passes = sum(s.state == "passed" for _, s in answered)
        said_fail = sum(sample.consultations[-1].call.passed is False for sample, _ in answered)
        if threshold is None:
            passed = 2 * passes > len(answered)
        else:
            passed = mean >= threshold and 2 * said_fail < len(answered)
        disagree = 0 < passes < len(answered)
        straddles = (
            threshold is not None
            and estimate.low is not None
            and estimate.high is not None
            and estimate.low < threshold <= estimate.high
        )
        unstable = disagree or straddles
        spread = statistics.stdev(scores) if len(scores) > 1 else 0.0
        summary = f"mean {mean:.2f} (sd {spread:.2f}) of {len(answered)} of {total} samples"
        summary += f", 95% {estimate.low:.2f}-{estimate.high:.2f}" if estimate.has_interval else f" ({estimate.note})"
        summary += f"; {passes} passed"
        if unstable:
            why = "the interval straddles the threshold" if straddles else "the samples disagree"
            summary += f"; unstable: {why}"
        return Settled("passed" if passed else "failed", mean, f"{summary}\n{lines}", unstable=unstable)


@dataclass(frozen=True, slots=True)
class Voter:
    """One voter of a vote: which criteria it judged, and its ruling."""

    criteria: str
    ruling: SingleRuling


@dataclass(frozen=True, slots=True)
class VoteRuling:
    """Several judges. The vote's threshold is the fraction of voters that must pass.

    A voter passes by the rubric rule at `voter_threshold` (None: by its own pass flag). The vote is decided as
    soon as the inconclusive voters could not change it either way; otherwise it is inconclusive.
    """

    voters: Sequence[Voter]
    voter_threshold: float | None

    @property
    def calls(self) -> list[JudgeCall]:
        return [call for voter in self.voters for call in voter.ruling.calls]

    def settle(self, threshold: float | None) -> Settled:
        threshold = 1.0 if threshold is None else threshold
        votes = [voter.ruling.settle(self.voter_threshold) for voter in self.voters]
        total = len(votes)
        passes = sum(v.state == "passed" for v in votes)
        unknown = [v for v in votes if v.state == "inconclusive"]
        need = max(0, math.ceil(threshold * total - 1e-9))
        lines = [
            f"- {voter.ruling.consultations[-1].call.model} on {short(voter.criteria)}: {_vote_text(vote)}"
            for voter, vote in zip(self.voters, votes, strict=True)
        ]
        summary = f"{passes} of {total} voters passed, {need} needed"
        if unknown:
            summary += f", {len(unknown)} inconclusive"
        reason = summary + "\n" + "\n".join(lines)
        if passes >= need:
            return Settled("passed", passes / total, reason)
        if passes + len(unknown) < need:
            return Settled("failed", passes / total, reason)
        return Settled("inconclusive", None, reason, unknown[0].cause)


def _vote_text(vote: Settled) -> str:
    if vote.score is None:
        return f"inconclusive ({vote.cause}): {vote.reason}"
    return f"{'pass' if vote.state == 'passed' else 'fail'} ({vote.score:.2f}): {vote.reason}"


@dataclass(frozen=True, slots=True)
class CrashedRuling:
    """The judge machinery itself raised: recorded as a miss, like a crashed matcher."""

    error: BaseException

    @property
    def calls(self) -> list[JudgeCall]:
        return []

    def settle(self, threshold: float | None) -> Settled:
        return Settled("failed", 0.0, f"the judge raised {type(self.error).__name__}: {self.error}", "error")
