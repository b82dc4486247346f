"""One online eval scored on one finished trace: a run through the eval runner, whose agent is the trace.

The runner (`execute_run(trace=...)`) makes the trace the run's agent and begins by sending it the trace's input,
so `t.reply`, the event stream, the spans and every assertion over them read the production request exactly as
they read a run that drove an agent. What the eval's own code raises is the run's error, with its line.
"""

from __future__ import annotations

import hashlib

from niceeval._core.results import RunResult
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute_run
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
    result, _ = await execute_run(entry, run_index, options, trace=trace)
    warnings = list(result.warnings)
    if trace.timed_out:
        warnings.append(
            "the trace never closed (no root span ended within the watcher's timeout): scored with the spans that "
            "had arrived, some may be missing"
        )
    metadata = {"trace_id": trace.trace_id, "service": trace.service}
    return result.model_copy(update={"case_id": trace.trace_id, "metadata": metadata, "warnings": warnings})
