"""Assertions: the one record every check in niceeval produces, and the matcher value type.

An assertion result is stored and sent (JSON report, results store), so it is a pydantic model.
A matcher is a runtime value the user chains (`.gate()`, `.at_least(x)`), so it is a frozen dataclass.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from niceeval._core.errors import UsageError, user_location

Severity = Literal["gate", "soft"]
State = Literal["passed", "failed", "inconclusive"]
Cause = Literal[
    "timeout", "provider_error", "rate_limited", "parse_error", "no_api_key", "no_price", "error", "not_run"
]
"""Why an assertion is inconclusive (or, for ``error``, why a matcher crashed; ``not_run``: a peer's check that
niceeval never runs, such as inline JavaScript)."""

CURRENT_GROUP: ContextVar[tuple[str, ...]] = ContextVar("niceeval_assertion_group", default=())
"""The `t.group(...)` blocks the eval is in, outermost first: assertions made there are named by them."""


def grouped(name: str) -> str:
    """`name` as recorded inside the current `t.group(...)` blocks: `checkout › includes('total')`."""
    groups = CURRENT_GROUP.get()
    return " › ".join((*groups, name)) if groups else name


SOFT_DEFAULT_THRESHOLD = 0.8
"""Threshold of a soft matcher when nothing else is said (similarity's default)."""


class JudgeCall(BaseModel):
    """One model asked for a verdict (a judge assertion, or one voter of a vote), as stored with its result."""

    model_config = ConfigDict(frozen=True)

    model: str
    """`provider/model` that was asked (or whose cached verdict was used)."""
    messages: list[dict[str, str]] = Field(default_factory=list)
    """The exact prompt sent, as `{"role", "content"}` messages (a repair turn included, when one was needed)."""
    input: str | None = None
    """The user's input the judge was shown beside the output (by default the message last sent with `t.send`);
    `None` when it was shown none."""
    score: float | None = None
    """The verdict's score in [0, 1]; `None` when this call gave none."""
    passed: bool | None = None
    """The judge's own pass/fail, for judges that give one (rubric, vote voters)."""
    reason: str = ""
    """The judge's reasoning, or why the call failed."""
    input_tokens: int = 0
    """Input tokens not served from the provider's prompt cache (of the original call, for a cached verdict)."""
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost: float | None = None
    """USD spent: 0 for a verdict read from niceeval's cache; `None` when the model has no price."""
    latency: float = 0.0
    """Seconds, retries and a repair turn included."""
    cached: bool = False
    """True when the verdict came from niceeval's judge cache (no request was made)."""
    fallback: bool = False
    """True when this is the fallback model, asked because the primary gave no verdict."""
    asked: bool = True
    """False when no request reached the provider (a verdict from the cache, no API key, a `--cache-only` miss)."""
    cause: Cause | None = None
    """Why this call gave no verdict (`rate_limited`, `timeout`, ...); `None` when it gave one."""

    @property
    def sent(self) -> bool:
        """A request reached the provider: what every report counts as a judge *call* (it spent tokens).

        A cached verdict is counted apart as *cached* (stores written before 2026-11-24 kept `asked` true on
        those, hence the check of both); a call neither sent nor cached was *not sent* (no key, `--cache-only`).
        """
        return self.asked and not self.cached


class AssertionResult(BaseModel):
    """The outcome of one named check, as reports and the results store see it."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Name shown in reports (the matcher's name, or its `.label()`)."""
    severity: Severity
    """`gate`: a miss fails the eval. `soft`: a miss makes the eval `scored`."""
    score: float | None
    """In [0, 1]; `None` when inconclusive."""
    threshold: float
    """The score must be at least this for the assertion to pass."""
    state: State
    """`passed`, `failed`, or `inconclusive` (could not be decided; counts as passed)."""
    reason: str = ""
    """Why it passed or missed, in words: expected vs actual, validation errors, a judge's reasoning."""
    expected: str | None = None
    """Short rendering of what was expected, when the matcher has one."""
    actual: str | None = None
    """Short rendering of what was seen."""
    location: str | None = None
    """`file:line` of the user's call that registered the assertion."""
    optional: bool = False
    """An optional assertion's inconclusive result is expected and never counts against the eval."""
    cause: Cause | None = None
    """Machine-readable reason for an inconclusive result (or `error` when the scorer raised)."""
    judge_calls: list[JudgeCall] = Field(default_factory=list)
    """The model calls behind a judge assertion, in order (empty for other assertions)."""
    key: str | None = None
    """A stable id given with `.key("id")`: `niceeval diff` matches assertions across runs by it (else by name)."""
    unstable: bool = False
    """A sampled judge (`samples=K`) whose verdict is not settled by its samples: their 95% interval straddles the
    threshold, or their pass decisions disagree. The K verdicts are in `judge_calls`."""
    points: float | None = None
    """In an eval with `define_eval(points=N)`: the points this assertion is worth (`.points(n)` on its matcher,
    or `t.score(n, ...)`), earned unless it failed. `None`: it earns no points."""

    @property
    def missed(self) -> bool:
        """True when the assertion did not pass (inconclusive is not a miss)."""
        return self.state == "failed"

    def shortfall(self) -> str:
        """Why a miss missed, in a few words: `score 0.62 < 0.70`, or `judge said fail (score 0.90)` when a judge
        answered pass=false (whatever its score), or both."""
        if self.score is None:
            return "no score"
        score = f"score {self.score:.2f}"
        under = self.score < self.threshold
        verdicts = [call for call in self.judge_calls if call.score is not None]
        if len(verdicts) == 1 and verdicts[0].passed is False:
            return f"judge said fail, {score} < {self.threshold:.2f}" if under else f"judge said fail ({score})"
        return f"{score} < {self.threshold:.2f}"


class Inconclusive(Exception):
    """Raised by a score function that cannot decide (judge unreachable, no price): the result is inconclusive.

    Args:
        cause: Why, as a machine-readable code.
        reason: Why, in words, with what to do about it.
    """

    def __init__(self, cause: Cause, reason: str) -> None:
        super().__init__(reason)
        self.cause: Cause = cause
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a score function may return when a bare number is not enough.

    Args:
        score: In [0, 1]; booleans count as 1.0 / 0.0.
        reason: Why, in words; shown in reports.
        expected: Short rendering of the expectation (optional).
        actual: Short rendering of what was seen (optional).
        passed: Decides the miss, when given, instead of `score >= threshold`: for matchers whose pass is not a
            cut of their score (`all_of`, `any_of`, `not_`). A `.at_least(x)` chained on such a matcher compares
            the score again.
    """

    score: float | bool
    reason: str = ""
    expected: str | None = None
    actual: str | None = None
    passed: bool | None = None


ScoreLike = bool | float | int | Verdict
ScoreFn = Callable[[Any], ScoreLike | Awaitable[ScoreLike]]


def check_threshold(value: object, where: str) -> float:
    """A threshold in [0, 1], or a `UsageError` that says what to write."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise UsageError(f"{where} needs a threshold between 0 and 1, got {value!r}. Write e.g. .at_least(0.7).")
    return float(value)


class Chainable:
    """How a miss counts, changed by chaining: `.gate()`, `.at_least(x)`, `.label(text)`, `.optional()`.

    One implementation for every kind of assertion: a `Matcher` is immutable (each call returns a new one), while
    the handles `t` returns for registered assertions (scoped assertions, judge verdicts, comparisons) change in
    place, since the user never registers them again. Each kind says how it applies a change in `_chained`.
    """

    __slots__ = ()

    def _chained(self, **changes: Any) -> Self:
        """Apply `changes` (any of `severity`, `threshold`, `name`, `is_optional`)."""
        raise NotImplementedError

    def _chain_name(self) -> str:
        """The assertion's name, for error messages."""
        return str(getattr(self, "name", type(self).__name__))

    def gate(self) -> Self:
        """A miss fails the eval; the threshold is kept."""
        return self._chained(severity="gate")

    def at_least(self, threshold: float) -> Self:
        """Soft: passes when the score is at least `threshold` (in [0, 1]); a miss makes the eval `scored`."""
        return self._chained(severity="soft", threshold=check_threshold(threshold, f"{self._chain_name()}.at_least()"))

    def label(self, text: str) -> Self:
        """Rename the assertion in reports."""
        if not isinstance(text, str) or not text.strip():
            raise UsageError(f"{self._chain_name()}.label() needs a non-empty string, got {text!r}.")
        return self._chained(name=text)

    def optional(self) -> Self:
        """An inconclusive result is expected: shown in reports, never counted against the eval."""
        return self._chained(is_optional=True)

    def key(self, id: str) -> Self:
        """A stable id for the assertion: reports show it, and `niceeval diff` matches runs by it, so renaming
        the label (or the matcher's text) keeps its history."""
        if not isinstance(id, str) or not id.strip():
            raise UsageError(f"{self._chain_name()}.key() needs a non-empty string, got {id!r}.")
        return self._chained(key_id=id.strip())


@dataclass(frozen=True, kw_only=True, slots=True)
class Matcher(Chainable):
    """A named, immutable scoring rule applied to a value by `t.check` / `t.require`.

    Chain to change how a miss counts: `.gate()`, `.at_least(x)`, `.label(text)`, `.optional()`.
    Each returns a new matcher; the original is never changed.
    """

    name: str
    score_fn: ScoreFn
    severity: Severity = "gate"
    threshold: float = 1.0
    expected: str | None = None
    is_optional: bool = False
    threshold_chained: bool = False
    """True once `.at_least(x)` set the threshold: the score decides, even over a verdict's own `passed`."""
    key_id: str | None = None
    """`.key("id")`: recorded as the result's `key`."""
    worth: float | None = None
    """`.points(n)`: the points the check earns when it passes, in an eval with `define_eval(points=N)`."""

    def _chained(self, **changes: Any) -> Self:
        if "threshold" in changes:
            changes["threshold_chained"] = True
        return replace(self, **changes)

    def points(self, n: float) -> Self:
        """In an eval with `define_eval(points=N)`: the check earns `n` points when it passes.

        A miss loses the points instead of failing the eval: whether the eval passes is decided by the points it
        earned (all of them, or the eval's `points_to_pass`). `t.require(...)` with points still stops the eval.
        """
        if isinstance(n, bool) or not isinstance(n, int | float) or not math.isfinite(n) or n <= 0:
            raise UsageError(f"{self.name}.points() takes the points the check earns, a positive number; got {n!r}.")
        return replace(self, worth=float(n), severity="soft")

    def result(self, raw: ScoreLike, location: str | None) -> AssertionResult:
        """Turn a score function's return value into a recorded result."""
        verdict = raw if isinstance(raw, Verdict) else Verdict(raw)
        score = _normalise_score(verdict.score, self.name)
        if verdict.passed is not None and not self.threshold_chained:
            passed = verdict.passed
        else:
            passed = score >= self.threshold
        return AssertionResult(
            name=self.name,
            severity=self.severity,
            score=score,
            threshold=self.threshold,
            state="passed" if passed else "failed",
            reason=verdict.reason,
            expected=verdict.expected if verdict.expected is not None else self.expected,
            actual=verdict.actual,
            location=location,
            optional=self.is_optional,
            key=self.key_id,
            points=self.worth,
        )

    def crashed(self, exc: BaseException, location: str | None) -> AssertionResult:
        """The result recorded when the score function raised: inconclusive for `Inconclusive`, else a miss."""
        if isinstance(exc, Inconclusive):
            undecided = inconclusive(
                self.name,
                severity=self.severity,
                threshold=self.threshold,
                cause=exc.cause,
                reason=exc.reason,
                location=location,
                optional=self.is_optional,
            )
            return undecided.model_copy(update={"key": self.key_id, "points": self.worth})
        return AssertionResult(
            name=self.name,
            severity=self.severity,
            score=0.0,
            threshold=self.threshold,
            state="failed",
            reason=crash_reason(exc),
            expected=self.expected,
            location=location,
            optional=self.is_optional,
            cause="error",
            key=self.key_id,
            points=self.worth,
        )


def crash_reason(exc: BaseException) -> str:
    """What a score function's (or a user predicate's) exception says in a report, with the user's line."""
    where = user_location(exc.__traceback__)
    return f"the scorer raised {type(exc).__name__}: {exc}" + (f" (at {where})" if where else "")


def assertion_kind(name: str) -> str:
    """An assertion's kind: its name up to the first parenthesis (`includes('x')` -> `includes`)."""
    return name.split("(", 1)[0].strip() or name


def _normalise_score(score: object, name: str) -> float:
    if isinstance(score, bool):
        return 1.0 if score else 0.0
    if isinstance(score, int | float) and not math.isnan(score) and 0.0 <= score <= 1.0:
        return float(score)
    raise UsageError(f"matcher {name!r} returned {score!r}; a score must be a bool or a number in [0, 1].")


def inconclusive(
    name: str,
    *,
    severity: Severity,
    threshold: float,
    cause: Cause,
    reason: str,
    location: str | None = None,
    optional: bool = False,
) -> AssertionResult:
    """An assertion that could not be decided (judge unavailable, no price, ...): score None, counts as passed."""
    return AssertionResult(
        name=name,
        severity=severity,
        score=None,
        threshold=threshold,
        state="inconclusive",
        reason=reason,
        location=location,
        optional=optional,
        cause=cause,
    )
