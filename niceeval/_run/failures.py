"""Which class a run's failure gets where it is caught, and the `classify_failure` hook applied to the result.

An exception is `infra` when a provider kept failing after its retries (a transient `ProviderError`, or an SDK's
own 5xx / 429 / connection error raised past a user's agent), `eval` when the eval's own code raised it (no frame
of niceeval between the eval function and where it was raised) and `agent` otherwise (it came up through a call
of niceeval's, such as `t.send` to the agent). A plain `assert` in the eval is a check: `agent`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import CodeType, TracebackType
from typing import TypeVar

from niceeval._core.errors import ErrorInfo, error_info, is_niceeval_file
from niceeval._core.failure import (
    FAILURE_CLASSES,
    INFRA_CAUSES,
    EvalFatalError,
    ExperimentFatalError,
    FailureClass,
    InfraUnavailable,
)
from niceeval._core.results import FailureHook, RunResult
from niceeval.providers import ProviderError, classify

T = TypeVar("T")

_SDK_PACKAGES = frozenset({"openai", "anthropic", "httpx", "httpcore"})


def caught(exc: BaseException, eval_code: CodeType | None) -> ErrorInfo:
    """`error_info(exc)` with the class it gives the run and whether it stops more than the run."""
    info = error_info(exc)
    stops = "eval" if isinstance(exc, EvalFatalError) else "suite" if isinstance(exc, ExperimentFatalError) else None
    failure = getattr(exc, "failure", None) if stops else None
    if info.kind == "usage":
        failure = failure or "eval"
    return info.model_copy(update={"failure": failure or raised_failure(exc, eval_code), "stops": stops})


def sandbox_failed(exc: BaseException) -> ErrorInfo:
    """A sandbox (or one of its services) that did not start: `infra`, unless the eval declared it wrongly."""
    info = error_info(exc)
    return info.model_copy(update={"failure": "eval" if info.kind == "usage" else "infra"})


def raised_failure(exc: BaseException, eval_code: CodeType | None) -> FailureClass:
    """The class of a run an exception ended (see the module's docstring)."""
    if isinstance(exc, InfraUnavailable) or _provider_outage(exc):
        return "infra"
    if isinstance(exc, AssertionError):
        return "agent"
    return "agent" if _through_niceeval(exc.__traceback__, eval_code) else "eval"


def _provider_outage(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ProviderError):
            if current.transient or current.cause == "no_api_key":
                return True
        elif type(current).__module__.split(".")[0] in _SDK_PACKAGES and classify(current, "")[1]:
            return True
        current = current.__cause__ or current.__context__
    return False


def _through_niceeval(tb: TracebackType | None, eval_code: CodeType | None) -> bool:
    """Whether the exception came up through niceeval's code below the eval function (a call into the agent)."""
    inside = False
    while tb is not None:
        code = tb.tb_frame.f_code
        if inside and code is not eval_code and is_niceeval_file(code.co_filename):
            return True
        inside = inside or code is eval_code
        tb = tb.tb_next
    return False


def failure_of(result: RunResult) -> FailureClass | None:
    """niceeval's class for a run (before any `classify_failure` hook); None unless its outcome is `failed`.

    An error decides by where it was caught (`ErrorInfo.failure`; API misuse is the eval's, the rest the agent's);
    without one, the assertions that failed the run do: a check the agent missed is `agent`, a matcher that
    crashed is `eval`, and a run failed only by judges the infrastructure kept from a verdict is `infra`.
    """
    if result.outcome != "failed":
        return None
    if result.error is not None:
        if result.error.failure is not None:
            return result.error.failure
        return "eval" if result.error.kind == "usage" else "agent"
    failing = [
        a
        for a in result.assertions
        if (a.state == "failed" and a.severity == "gate") or (a.state == "inconclusive" and not a.optional)
    ]
    if any(a.state == "failed" and a.cause != "error" for a in failing):
        return "agent"
    if any(a.cause == "error" for a in failing):
        return "eval"
    if failing and all(a.cause in INFRA_CAUSES for a in failing):
        return "infra"
    return "agent"


def classified(result: RunResult, hook: FailureHook | None) -> RunResult:
    """The run with its failure class: niceeval's, then the project's `classify_failure` hook, if any.

    A hook that raises or returns something else than a class keeps niceeval's class and says so in a warning.
    """
    failure = failure_of(result)
    if failure is None:
        return result
    result = result.model_copy(update={"failure": failure})
    if hook is None:
        return result
    try:
        chosen = hook(result)
    except Exception as exc:
        note = f"classify_failure raised {type(exc).__name__}: {exc}; the run keeps the class {failure!r}"
        return result.model_copy(update={"warnings": [*result.warnings, note]})
    if chosen is None:
        return result
    if chosen not in FAILURE_CLASSES:
        note = (
            f"classify_failure returned {chosen!r}, not one of {', '.join(FAILURE_CLASSES)} or None; "
            f"the run keeps the class {failure!r}"
        )
        return result.model_copy(update={"warnings": [*result.warnings, note]})
    return result.model_copy(update={"failure": chosen})


async def retried(
    execute: Callable[[], Awaitable[tuple[RunResult, T]]], retries: int, going_on: Callable[[], bool]
) -> tuple[RunResult, T]:
    """Run `execute` again while its run failed for `infra`, up to `retries` more times (and while `going_on()`):
    the last attempt is the run's result, with how many attempts it took. A fatal error is not retried."""
    result, extra = await execute()
    attempts = 1
    while _retry(result) and attempts <= retries and going_on():
        result, extra = await execute()
        attempts += 1
    return (result.model_copy(update={"attempts": attempts}) if attempts > 1 else result), extra


def _retry(result: RunResult) -> bool:
    """An infra failure another attempt may not repeat: not a fatal error, and not judges without an API key (a key
    does not appear between attempts, and each attempt would pay the agent again)."""
    if result.failure != "infra" or (result.error is not None and result.error.stops is not None):
        return False
    unavailable = [a for a in result.assertions if a.state == "inconclusive" and not a.optional]
    return result.error is not None or not unavailable or any(a.cause != "no_api_key" for a in unavailable)
