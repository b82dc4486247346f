"""One online eval scored on one finished trace: a run through the eval runner, whose agent is the trace.

The run begins by sending the trace's input to the trace (`TraceAgent`), so `t.reply`, the event stream, the
spans and every assertion over them read the production request exactly as they read a run that drove an agent.
What the eval's own code raises is the run's error, with the eval file's line, as in any run.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import replace
from typing import Any

from niceeval._core.results import RunResult
from niceeval._eval.spec import EvalFunction
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute_run
from niceeval.online._agent import TraceAgent
from niceeval.tracing import Trace


def chosen(entry: EvalEntry, trace: Trace) -> bool:
    """Whether the online eval scores `trace`: its `where=` holds (an error in it counts as no) and the trace id
    falls in its `sample=` share (by hash, so every watcher behind one collector chooses the same traces).

    Raises:
        Exception: What `where=` raised (the watcher records it as the eval's error).
    """
    spec = entry.spec
    if spec.where is not None and not spec.where(trace):
        return False
    return spec.sample is None or sampled(trace.trace_id, entry.id, spec.sample)


def sampled(trace_id: str, salt: str, share: float) -> bool:
    """Whether `trace_id` falls in the first `share` of the hash space (salted per eval: evals sample apart)."""
    digest = hashlib.blake2b(f"{salt}:{trace_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") < share * 2**64


async def score(entry: EvalEntry, trace: Trace, options: ExecOptions, run_index: int) -> RunResult:
    """Run online eval `entry` on `trace` and return the folded run (never raises for what the eval does)."""
    agent = TraceAgent(trace)
    run_options = replace(options, agent_for_run=lambda _eval_id, _index: agent)
    spec = replace(entry.spec, fn=_after_input(entry.spec.fn, is_async=entry.spec.is_async))
    result, _ = await execute_run(replace(entry, spec=spec), run_index, run_options, trace=trace)
    warnings = list(result.warnings)
    if trace.timed_out:
        warnings.append(
            "the trace never closed (no root span ended within the watcher's timeout): scored with the spans that "
            "had arrived, some may be missing"
        )
    metadata = {"trace_id": trace.trace_id, "service": trace.service}
    return result.model_copy(update={"case_id": trace.trace_id, "metadata": metadata, "warnings": warnings})


def _after_input(fn: EvalFunction, *, is_async: bool) -> EvalFunction:
    """`fn`, run after the trace's input is sent to the trace (the turn every assertion reads)."""
    if is_async:

        async def online_async(t: Any) -> Any:
            await t.send(t.input)
            returned = fn(t)
            return await returned if inspect.isawaitable(returned) else returned

        return online_async

    def online(t: Any) -> Any:
        t.send(t.input)
        return fn(t)

    return online
