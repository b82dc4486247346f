"""Execute one run of one eval: fresh context, the user function under a timeout, then fold."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

from niceeval._core.errors import ErrorInfo, UsageError, error_info
from niceeval._core.outcome import fold
from niceeval._core.results import RunResult
from niceeval._eval.config import Price
from niceeval._eval.context import EvalContext, RunState, StopEval, SyncEvalContext, _ContextBase
from niceeval._run.discovery import EvalEntry
from niceeval._threads import call_in_thread

_CLOSE_TIMEOUT_S = 10.0


@dataclass(frozen=True, kw_only=True, slots=True)
class ExecOptions:
    """Settings every run shares."""

    timeout: float
    agent: Any = None
    fail_on_inconclusive: bool = False
    pricing: Mapping[str, Price] = field(default_factory=dict)


async def _call(entry: EvalEntry, ctx: _ContextBase) -> None:
    spec = entry.spec
    if not isinstance(ctx, SyncEvalContext):
        await spec.fn(ctx)
        return
    # A sync eval cannot be interrupted; on timeout its daemon thread is abandoned and finishes on its own.
    def run(portal: BlockingPortal) -> object:
        ctx.portal = portal
        return spec.fn(ctx)

    returned = await call_in_thread(run)
    if hasattr(returned, "__await__"):
        await returned


def _unawaited_requires(state: RunState) -> ErrorInfo | None:
    for handle in state.pending_requires:
        if not handle._awaited:
            return error_info(
                UsageError(
                    f"t.require(...) at {handle.location} uses an async matcher and was not awaited; "
                    "write `await t.require(...)`."
                )
            )
    return None


async def execute(entry: EvalEntry, run_index: int, options: ExecOptions) -> RunResult:
    """Run the eval once and return its folded result. Never raises for anything the eval does."""
    spec = entry.spec
    state = RunState()
    agent = spec.agent if spec.agent is not None else options.agent
    timeout = spec.timeout or options.timeout
    error: ErrorInfo | None = None
    start = time.perf_counter()
    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                ctx_type = EvalContext if spec.is_async else SyncEvalContext
                ctx = ctx_type(state=state, task_group=tg, agent=agent, eval_id=entry.id, pricing=options.pricing)
                try:
                    await _call(entry, ctx)
                except StopEval:
                    pass
                except Exception as exc:
                    error = error_info(exc)
                finally:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT_S):
                        await ctx._close()
    except TimeoutError:
        error = ErrorInfo(
            type="TimeoutError",
            message=f"the eval did not finish within its {timeout:g} s timeout "
            f"(raise it with @define_eval(timeout=...) or --timeout)",
            location=f"{entry.file}:{spec.line}",
            kind="timeout",
        )
    error = error or state.usage_error or _unawaited_requires(state)
    for handle in state.scoped:
        try:
            state.assertions.append(handle.evaluate(state.log.events))
        except UsageError as exc:
            error = error or error_info(exc)
    duration = time.perf_counter() - start
    outcome = fold(
        state.assertions,
        errored=error is not None,
        skipped=state.skip_reason is not None,
        fail_on_inconclusive=options.fail_on_inconclusive,
    )
    return RunResult(
        eval_id=entry.id,
        file=entry.file,
        line=spec.line,
        run_index=run_index,
        outcome=outcome,
        duration_s=duration,
        error=error,
        skip_reason=state.skip_reason,
        assertions=state.assertions,
        events=state.log.events,
    )
