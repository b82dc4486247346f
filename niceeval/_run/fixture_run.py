"""A run driven from outside the runner: the `niceeval` pytest fixture hands `t` to an ordinary test.

The test body runs in pytest's thread; the context's event loop runs in a portal thread, exactly as for a plain
`def` eval. When the test returns, the run is finished like any other: the session closed, pending judge verdicts
collected, scoped assertions scored over the event stream, and everything folded into a `RunResult`.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass

import anyio

from niceeval._core.errors import ErrorInfo, error_info
from niceeval._core.outcome import fold
from niceeval._core.results import RunResult
from niceeval._eval.context import RunInputs, RunState, SyncEvalContext
from niceeval._run.execute import (
    ExecOptions,
    agent_spend_of,
    evaluate_scoped,
    judge_spend_of,
    suite_judges,
    unawaited_requires,
)
from niceeval._run.judging import JudgeSlot
from niceeval._run.loop_host import LoopHost


@dataclass(frozen=True, kw_only=True, slots=True)
class InlineTarget:
    """What the inline run is reported as: the test's id and where it is defined."""

    eval_id: str
    file: str
    line: int


class InlineRun:
    """Open with `start()` (returns `t`), close with `finish(exc)` (returns the folded result). One use only.

    Args:
        target: The id and location the run is reported under.
        options: Run settings; `options.judges` should be the host's judges (shared cache and clients).
        host: The loop the run's tasks live on.
    """

    def __init__(self, target: InlineTarget, options: ExecOptions, host: LoopHost) -> None:
        self._target = target
        self._options = options
        self._host = host
        self._ctx: Future[SyncEvalContext] = Future()
        self._result: Future[RunResult] | None = None
        self._done: anyio.Event | None = None
        self._error: ErrorInfo | None = None
        self._started = 0.0

    def start(self) -> SyncEvalContext:
        """Start the run on the host's loop; return the context for the test to use."""
        self._started = time.perf_counter()
        self._result = self._host.submit(self._hold)
        return self._ctx.result()

    def finish(self, exc: BaseException | None = None) -> RunResult:
        """End the run (the test returned, or raised `exc`) and fold it."""
        assert self._result is not None, "InlineRun.start() first"
        if self._result.done():
            return self._result.result()
        if exc is not None:
            self._error = error_info(exc)
        self._host.portal.call(self._release)
        return self._result.result()

    async def _release(self) -> None:
        assert self._done is not None
        self._done.set()

    async def _hold(self) -> RunResult:
        options, target = self._options, self._target
        state = RunState()
        self._done = anyio.Event()
        try:
            async with suite_judges(options) as judges:
                slot = JudgeSlot(judges, settings=options.judge, grader=options.grader, pricing=options.pricing)
                async with anyio.create_task_group() as tg:
                    inputs = RunInputs(
                        eval_id=target.eval_id,
                        task_group=tg,
                        agent=options.agent,
                        judge=slot,
                        pricing=options.pricing,
                        followup_model=options.judge.model,
                        users=slot,
                        portal=self._host.portal,
                    )
                    ctx = SyncEvalContext(inputs, state)
                    self._ctx.set_result(ctx)
                    await self._done.wait()
                    with anyio.CancelScope(shield=True):
                        await ctx._close()
                state.assertions.extend(slot.results())
        except BaseException as exc:
            if not self._ctx.done():
                self._ctx.set_exception(exc)
            raise
        return self._fold(state)

    def _fold(self, state: RunState) -> RunResult:
        scoped_misuse = evaluate_scoped(state)
        error = self._error or state.usage_error or unawaited_requires(state) or scoped_misuse
        target, options = self._target, self._options
        return RunResult(
            eval_id=target.eval_id,
            file=target.file,
            line=target.line,
            outcome=fold(
                state.assertions,
                errored=error is not None,
                skipped=state.skip_reason is not None,
                fail_on_inconclusive=options.fail_on_inconclusive,
            ),
            duration_s=time.perf_counter() - self._started,
            error=error,
            skip_reason=state.skip_reason,
            assertions=state.assertions,
            events=state.log.events,
            agent_spend=agent_spend_of(state, options),
            judge_spend=judge_spend_of(state, options),
        )
