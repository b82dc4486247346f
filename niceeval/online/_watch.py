"""The watcher behind `niceeval watch`: receive spans, close traces, score them with the online evals, store.

Three parts, each bounded, so a slow judge or store never slows the receiver (which answers on its own thread):

1. the receiver puts spans in the `TraceAssembler` (bounded: open traces and spans held);
2. a pump moves each closed trace, for every online eval that chooses it (`where=`, `sample=`), into the queue of
   pending evals (bounded: past it, the trace is sampled away for that eval and counted);
3. `concurrency` workers score them (`score`; each judge request passes the `JudgeBudget` gate first), feed the
   alarms (an alarm that fires is printed, kept on the result that tipped it, and runs the `on_alarm` command),
   hand each result to the sinks (OpenTelemetry export) and to the writer, which stores them in batches from a
   worker thread.

`status()` is what `GET /status` answers: queue depths, drops, throughput.

This module is the online package's one door: `niceeval watch` builds the watcher (`Watcher`, `WatchOptions`),
its bounds (`AssemblyLimits`), the record of its results (`OnlineRecord`) and their export (`OtelSink`) from here.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TextIO

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from niceeval._core.errors import error_info
from niceeval._core.results import RunResult
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions
from niceeval._run.judging import SuiteJudges
from niceeval.online._alarms import Alarm, AlarmRule, Alarms, alarm_syntax, described, parse_alarm
from niceeval.online._assembler import AssemblyLimits, TraceAssembler
from niceeval.online._budget import SPENT, JudgeBudget
from niceeval.online._export import OtelSink
from niceeval.online._score import chosen, score
from niceeval.online._stored import OnlineRecord
from niceeval.tracing import Trace
from niceeval.tracing._session import watch_receiver

__all__ = [
    "AlarmRule",
    "AssemblyLimits",
    "OnlineRecord",
    "OtelSink",
    "ResultSink",
    "WatchOptions",
    "Watcher",
    "alarm_syntax",
    "parse_alarm",
]
HOOK_TIMEOUT_S = 60.0

Pending = tuple[EvalEntry, Trace]


class ResultSink(Protocol):
    """What else sees each online result as it is scored (the alarms, the OpenTelemetry export)."""

    def took(self, result: RunResult, trace: Trace) -> None:
        """Take one result (must not block: it runs on the watcher's loop)."""
        ...


@dataclass(frozen=True, kw_only=True, slots=True)
class WatchOptions:
    """How the watcher listens, and its bounds.

    Args:
        host: The address to listen on (beyond loopback only with `token`).
        port: The OTLP/HTTP port (0: a free one).
        token: The bearer token every request must send.
        concurrency: Online evals scored at once.
        max_pending: Evals waiting to be scored; past it a trace is sampled away for that eval (counted).
        judge_calls_per_hour: The judge budget (None: none).
        limits: When traces close and how many are held.
        tick: Seconds between looks for closed traces.
        batch: Results stored in one write at most.
        alarms: The drift alarms (`--alarm`).
        on_alarm: A shell command run when an alarm fires, with the evidence as JSON on its standard input and in
            `NICEEVAL_ALARM`.
    """

    host: str = "127.0.0.1"
    port: int = 4318
    token: str | None = None
    concurrency: int = 4
    max_pending: int = 1_000
    judge_calls_per_hour: int | None = 1_000
    limits: AssemblyLimits = field(default_factory=AssemblyLimits)
    tick: float = 0.05
    batch: int = 100
    alarms: tuple[AlarmRule, ...] = ()
    on_alarm: str | None = None


@dataclass(slots=True)
class EvalCounts:
    """What happened to the online evals (for `/status`)."""

    queued: int = 0
    scored: int = 0
    dropped: int = 0
    where_errors: int = 0
    last_where_error: str = ""
    sink_errors: int = 0
    stored: int = 0
    store_errors: int = 0
    last_store_error: str = ""
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))


class Watcher:
    """One watch session.

    Args:
        evals: The online evals.
        execution: How each run executes (timeout, root, judge settings, prices).
        options: Listening and bounds.
        record: Where results are stored (None: not stored).
        sinks: What else sees each result.
        clock: Seconds (monotonic).
        out: Where the watcher says what it does (None: standard error).
    """

    def __init__(
        self,
        evals: Sequence[EvalEntry],
        execution: ExecOptions,
        options: WatchOptions,
        *,
        record: OnlineRecord | None = None,
        sinks: Sequence[ResultSink] = (),
        clock: Callable[[], float] = time.monotonic,
        out: TextIO | None = None,
    ) -> None:
        self.evals = list(evals)
        self.options = options
        self.record = record
        self.sinks = list(sinks)
        self.assembler = TraceAssembler(options.limits, clock=clock)
        self.budget = JudgeBudget(options.judge_calls_per_hour, clock=clock)
        self.counts = EvalCounts()
        self.alarms = Alarms(list(options.alarms))
        self.url = ""
        self._execution = execution
        self._clock = clock
        self._out = out
        self._running = 0
        self._started = clock()
        self._refusals: Callable[[], int] = lambda: 0

    def status(self) -> dict[str, Any]:
        """Queue depths, drops and throughput (what `GET /status` answers)."""
        counts, assembled = self.counts, self.assembler.counts
        now = self._clock()
        minute = sum(1 for at in tuple(counts.recent) if at > now - 60)  # a copy: the loop appends meanwhile
        return {
            "uptime_s": round(now - self._started, 3),
            "requests": {"refused": self._refusals()},
            "spans": {
                "received": assembled.spans,
                "held": self.assembler.held_spans,
                "dropped": assembled.dropped_spans,
                "late": assembled.late_spans,
            },
            "traces": {
                "open": self.assembler.open_traces,
                "received": assembled.traces,
                "closed": assembled.closed,
                "timed_out": assembled.timed_out,
                "dropped": assembled.dropped_traces,
            },
            "evals": {
                "pending": counts.queued - counts.scored - self._running,
                "running": self._running,
                "scored": counts.scored,
                "dropped": counts.dropped,
                "where_errors": counts.where_errors,
                "per_second": round(minute / 60, 3),
            },
            "judge": {
                "calls_last_hour": self.budget.spent,
                "budget_per_hour": self.budget.per_hour,
                "refused": self.budget.refused,
            },
            "alarms": [alarm.evidence() for alarm in self.alarms.fired],
            "store": {
                "stored": counts.stored,
                "errors": counts.store_errors,
                "suite_runs": list(self.record.suite_run_ids) if self.record else [],
            },
        }

    async def run(self, stopping: anyio.Event) -> None:
        """Watch until `stopping` is set; then score the traces still open and store everything."""
        options = self.options
        receiver = watch_receiver(
            self.assembler, host=options.host, port=options.port, token=options.token, status=self.status
        )
        await anyio.to_thread.run_sync(receiver.start)
        if self.record is not None:
            await anyio.to_thread.run_sync(self.record.open)
        self.url, self._refusals = receiver.url, lambda: receiver.refusals.count
        self._say(
            f"watching: OTLP/HTTP traces at {receiver.endpoint}, status at {receiver.url}/status; "
            f"{len(self.evals)} online eval(s)"
        )
        for rule in options.alarms:
            self._say(f"alarm {rule.text}: against {described(rule.reference)}, alpha {rule.alpha:g}")
        judges = SuiteJudges(self._execution.root, gate=self.budget)
        pending_in, pending_out = anyio.create_memory_object_stream[Pending](options.max_pending)
        done_in, done_out = anyio.create_memory_object_stream[RunResult](options.max_pending)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._writer, done_out)
                async with pending_out, done_in:
                    for _ in range(options.concurrency):
                        tg.start_soon(self._worker, pending_out.clone(), done_in.clone(), judges, tg)
                await self._pump(pending_in, stopping, receiver.close)
        finally:
            with anyio.CancelScope(shield=True):
                await receiver.close()
                await judges.aclose()
        self._say(self._summary())

    async def _pump(
        self, pending: MemoryObjectSendStream[Pending], stopping: anyio.Event, stop_receiving: Callable[[], Any]
    ) -> None:
        async with pending:
            while not stopping.is_set():
                self._offer(pending, self.assembler.due())
                with anyio.move_on_after(self.options.tick):
                    await stopping.wait()
            await stop_receiving()
            self._offer(pending, self.assembler.drain())

    def _offer(self, pending: MemoryObjectSendStream[Pending], traces: Sequence[Trace]) -> None:
        for trace in traces:
            for entry in self.evals:
                try:
                    if not chosen(entry, trace):
                        continue
                except Exception as exc:  # the eval's `where=` is user code: counted and shown, never fatal
                    self.counts.where_errors += 1
                    info = error_info(exc)
                    if not self.counts.last_where_error:
                        self._say(f"{entry.id}: where= raised {info.type}: {info.message} ({info.location})")
                    self.counts.last_where_error = f"{info.location}: {info.type}: {info.message}"
                    continue
                try:
                    pending.send_nowait((entry, trace))
                except anyio.WouldBlock:
                    self.counts.dropped += 1
                else:
                    self.counts.queued += 1

    async def _worker(
        self,
        pending: MemoryObjectReceiveStream[Pending],
        done: MemoryObjectSendStream[RunResult],
        judges: SuiteJudges,
        tg: anyio.abc.TaskGroup,
    ) -> None:
        execution = replace(self._execution, judges=judges)
        async with pending, done:
            async for entry, trace in pending:
                self._running += 1
                try:
                    result = await score(entry, trace, execution, 0)
                finally:
                    self._running -= 1
                if any(a.cause == "rate_limited" and SPENT in a.reason for a in result.assertions):
                    result = result.model_copy(update={"warnings": [*result.warnings, self.budget.note()]})
                self.counts.scored += 1
                self.counts.recent.append(self._clock())
                for alarm in self.alarms.observe(result):
                    self._say(alarm.message())
                    result = result.model_copy(update={"warnings": [*result.warnings, alarm.message()]})
                    if self.options.on_alarm:
                        tg.start_soon(self._hook, self.options.on_alarm, alarm)
                for sink in self.sinks:
                    try:
                        sink.took(result, trace)
                    except Exception as exc:  # an alarm hook or exporter that fails never stops the scoring
                        self.counts.sink_errors += 1
                        self._say(f"{type(sink).__name__} failed on {result.eval_id}: {type(exc).__name__}: {exc}")
                await done.send(result)

    async def _writer(self, done: MemoryObjectReceiveStream[RunResult]) -> None:
        async with done:
            async for first in done:
                batch = [first]
                while len(batch) < self.options.batch:
                    try:
                        batch.append(done.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                await self._store(batch)
        if self.record is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.record.close)

    async def _store(self, batch: list[RunResult]) -> None:
        if self.record is None:
            return
        try:
            await anyio.to_thread.run_sync(self.record.add, batch)
        except Exception as exc:  # a store that fails loses these results, counted and said; watching goes on
            self.counts.store_errors += len(batch)
            if not self.counts.last_store_error:
                self._say(f"the store did not take {len(batch)} result(s): {type(exc).__name__}: {exc}")
            self.counts.last_store_error = f"{type(exc).__name__}: {exc}"
        else:
            self.counts.stored += len(batch)

    async def _hook(self, command: str, alarm: Alarm) -> None:
        evidence = json.dumps(alarm.evidence())
        try:
            with anyio.fail_after(HOOK_TIMEOUT_S):
                done = await anyio.run_process(
                    command, input=evidence.encode(), env={**os.environ, "NICEEVAL_ALARM": evidence}, check=False
                )
        except (OSError, TimeoutError) as exc:
            self._say(f"the alarm command {command!r} did not run to its end: {type(exc).__name__}: {exc}")
            return
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip()[-500:]
            self._say(f"the alarm command {command!r} exited {done.returncode}: {said}")

    def _summary(self) -> str:
        status = self.status()
        traces, evals = status["traces"], status["evals"]
        runs = ", ".join(status["store"]["suite_runs"]) or "none (no store)"
        return (
            f"stopped: {traces['closed']} trace(s) closed ({traces['timed_out']} after the timeout, "
            f"{traces['dropped']} dropped), {evals['scored']} online eval run(s) scored, {evals['dropped']} sampled "
            f"away past the queue bound; {len(self.alarms.fired)} alarm(s); suite run(s): {runs}"
        )

    def _say(self, message: str) -> None:
        print(f"niceeval watch: {message}", file=self._out or sys.stderr, flush=True)
