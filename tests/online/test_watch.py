"""`niceeval watch`'s watcher: OTLP in, traces closed, online evals scored and stored, bad input answered."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from niceeval._run.execute import ExecOptions
from niceeval.online._assembler import AssemblyLimits
from niceeval.online._stored import OnlineRecord
from niceeval.online._watch import Watcher, WatchOptions
from niceeval.store import Store, SuiteRunStart
from niceeval.store._recorder import Recorder
from niceeval.testing import Fault, LLMServer
from tests.judge.judge_helpers import RUBRIC_PASS, always
from tests.online.online_helpers import chat_trace, online_evals

pytestmark = pytest.mark.anyio

SOURCE = """
from niceeval import define_eval
from niceeval.expect import includes

@define_eval(online=True)
async def helpful(t):
    t.check(t.reply, includes("refund"))
    t.called_tool("search")
    t.no_error_spans()

@define_eval(online=True, where=lambda trace: "crash" in trace.input)
def crashes(t):
    t.check(t.input, includes("crash"))
    raise ValueError("the eval's own bug")
"""

FAST = AssemblyLimits(grace=0.05, timeout=1.0)


@asynccontextmanager
async def watching(watcher: Watcher) -> AsyncIterator[Watcher]:
    stopping = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(watcher.run, stopping)
        with anyio.fail_after(10):
            while not watcher.url:
                await anyio.sleep(0.01)
        try:
            yield watcher
        finally:
            stopping.set()


async def post(watcher: Watcher, body: bytes, content_type: str = "application/json") -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.post(f"{watcher.url}/v1/traces", content=body, headers={"content-type": content_type})


async def scored(watcher: Watcher, count: int) -> None:
    with anyio.fail_after(20):
        while watcher.counts.scored < count:
            await anyio.sleep(0.02)


def recorder_for(tmp_path: Path, evals: list) -> tuple[Recorder, OnlineRecord]:
    recorder = Recorder.open(str(tmp_path / "results.db"), tmp_path)
    start = SuiteRunStart(id="unused", command=["niceeval", "watch"], root=str(tmp_path))
    return recorder, OnlineRecord(recorder, start, evals, clock=lambda: 0.0)


async def test_a_closed_trace_is_scored_by_the_online_evals_and_stored(tmp_path: Path) -> None:
    evals = online_evals(tmp_path, SOURCE)
    recorder, record = recorder_for(tmp_path, evals)
    good_id, good = chat_trace("where is my refund?", "Your refund is on its way.")
    crash_id, crash = chat_trace("crash please", "no idea", tool=None)
    watcher = Watcher(evals, ExecOptions(timeout=10, root=tmp_path), WatchOptions(port=0, limits=FAST), record=record)
    async with watching(watcher):
        assert (await post(watcher, good)).status_code == 200
        assert (await post(watcher, crash)).status_code == 200
        await scored(watcher, 3)
    recorder.close()
    store = Store.open(str(tmp_path / "results.db"))
    try:
        (run,) = store.runs()
        assert run.kind == "online"
        results = {(r.eval_id.split("::")[1], r.case_id): r for r in store.results(run.id)}
    finally:
        store.close()
    assert set(results) == {("helpful", good_id), ("helpful", crash_id), ("crashes", crash_id)}
    assert results["helpful", good_id].outcome == "passed"
    missed = results["helpful", crash_id]
    assert missed.outcome == "failed"
    assert [a.name for a in missed.assertions if a.state == "failed"] == ["includes('refund')", "called_tool('search')"]
    crashed = results["crashes", crash_id]
    assert crashed.error is not None and crashed.error.type == "ValueError"
    assert crashed.error.location == f"{tmp_path / 'evals_online.py'}:14"
    assert watcher.counts.scored == 3 and watcher.counts.stored == 3


async def test_malformed_otlp_is_answered_400_and_counted_and_the_watcher_goes_on(tmp_path: Path) -> None:
    evals = online_evals(tmp_path, SOURCE)
    watcher = Watcher(evals, ExecOptions(timeout=10, root=tmp_path), WatchOptions(port=0, limits=FAST))
    async with watching(watcher):
        bad = await post(watcher, b"{not json")
        _, good = chat_trace("refund?", "refund sent")
        ok = await post(watcher, good)
        await scored(watcher, 1)
        async with httpx.AsyncClient() as client:
            status = (await client.get(f"{watcher.url}/status")).json()
    assert bad.status_code == 400 and "does not parse" in bad.text
    assert ok.status_code == 200
    assert status["requests"]["refused"] == 1
    assert status["traces"]["received"] == 1 and status["evals"]["scored"] == 1


async def test_a_trace_without_a_root_is_scored_after_the_timeout_with_a_note(tmp_path: Path) -> None:
    evals = online_evals(tmp_path, SOURCE.split("@define_eval(online=True, where")[0])
    watcher = Watcher(evals, ExecOptions(timeout=10, root=tmp_path), WatchOptions(port=0, limits=FAST))
    results = []

    class Keep:
        def took(self, result, trace) -> None:  # type: ignore[no-untyped-def]
            results.append((result, trace))

    watcher.sinks.append(Keep())
    _, payload = chat_trace("refund?", "refund sent")
    orphaned = json.loads(payload)
    spans = orphaned["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[:] = [span for span in spans if span["parentSpanId"]]  # the root never arrives
    async with watching(watcher):
        await post(watcher, json.dumps(orphaned).encode())
        await anyio.sleep(0.3)
        assert watcher.counts.scored == 0  # still open: no root, timeout not reached
        await scored(watcher, 1)
    ((result, trace),) = results
    assert trace.timed_out
    assert any("never closed" in warning for warning in result.warnings)
    assert watcher.assembler.counts.timed_out == 1


JUDGED = """
from niceeval import define_eval

@define_eval(online=True, judge={"model": "openai/gpt-5-mini", "max_retries": 0})
async def polite(t):
    t.judge.rubric("Is the reply polite?")
"""


@pytest.fixture
def judged_by(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> LLMServer:
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    return llm_server


async def test_a_judge_outage_makes_the_judge_inconclusive_and_the_receiver_keeps_answering(
    tmp_path: Path, judged_by: LLMServer
) -> None:
    judged_by.faults = lambda request: Fault.server_error()
    watcher = Watcher(
        online_evals(tmp_path, JUDGED), ExecOptions(timeout=10, root=tmp_path), WatchOptions(port=0, limits=FAST)
    )
    kept: list = []
    watcher.sinks.append(type("Keep", (), {"took": lambda self, result, trace: kept.append(result)})())
    async with watching(watcher):
        answers = [await post(watcher, chat_trace(f"q{i}", "thanks")[1]) for i in range(3)]
        await scored(watcher, 3)
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert [(r.outcome, r.assertions[0].state) for r in kept] == [("passed", "inconclusive")] * 3
    assert all(r.assertions[0].cause == "provider_error" for r in kept)


async def test_past_the_judge_budget_judges_answer_from_the_cache_only(tmp_path: Path, judged_by: LLMServer) -> None:
    judged_by.set_script(always(RUBRIC_PASS))
    options = WatchOptions(port=0, limits=FAST, judge_calls_per_hour=1, concurrency=1)
    watcher = Watcher(online_evals(tmp_path, JUDGED), ExecOptions(timeout=10, root=tmp_path), options)
    kept: list = []
    watcher.sinks.append(type("Keep", (), {"took": lambda self, result, trace: kept.append(result)})())
    async with watching(watcher):
        await post(watcher, chat_trace("first", "thanks")[1])
        await scored(watcher, 1)
        await post(watcher, chat_trace("second", "thanks a lot")[1])
        await scored(watcher, 2)
    first, second = kept
    assert first.assertions[0].state == "passed" and first.warnings == []
    assert second.assertions[0].state == "inconclusive"
    assert any("judge budget (1 calls an hour) was spent" in w for w in second.warnings)
    assert len(judged_by.requests) == 1
    assert watcher.status()["judge"] == {"calls_last_hour": 1, "budget_per_hour": 1, "refused": 1}


async def test_concurrent_judge_calls_never_spend_past_the_budget(tmp_path: Path, judged_by: LLMServer) -> None:
    judged_by.set_script(always(RUBRIC_PASS))
    judged_by.latency = 0.3  # every call is still out when the last one is asked
    options = WatchOptions(port=0, limits=FAST, judge_calls_per_hour=3, concurrency=8)
    watcher = Watcher(online_evals(tmp_path, JUDGED), ExecOptions(timeout=10, root=tmp_path), options)
    kept: list = []
    watcher.sinks.append(type("Keep", (), {"took": lambda self, result, trace: kept.append(result)})())
    async with watching(watcher):
        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(post, watcher, chat_trace(f"question {i}", f"answer {i}")[1])
        await scored(watcher, 8)
    assert len(judged_by.requests) == 3
    states = sorted((r.assertions[0].state, r.assertions[0].cause, r.judge_spend.calls) for r in kept)
    assert states == [("inconclusive", "rate_limited", 0)] * 5 + [("passed", None, 1)] * 3
    refused = [r for r in kept if r.assertions[0].state == "inconclusive"]
    assert all(
        "the judge budget (3 calls an hour) is spent: this judge call did not start" in r.assertions[0].reason
        for r in refused
    )
    assert all(r.outcome == "passed" and "judge budget (3 calls an hour) was spent" in r.warnings[-1] for r in refused)
    assert watcher.status()["judge"] == {"calls_last_hour": 3, "budget_per_hour": 3, "refused": 5}


async def test_each_result_goes_out_as_evaluation_events_inside_the_trace_it_scored(tmp_path: Path) -> None:
    from niceeval.online._watch import OtelSink
    from niceeval.report.otel import EvaluationExporter
    from niceeval.tracing._collector import TraceCollector
    from niceeval.tracing._receiver import TraceReceiver

    collector = TraceCollector()
    otel = TraceReceiver(collector).start()
    exporter = EvaluationExporter(otel.endpoint)
    evals = online_evals(tmp_path, SOURCE.split("@define_eval(online=True, where")[0])
    watcher = Watcher(
        evals, ExecOptions(timeout=10, root=tmp_path), WatchOptions(port=0, limits=FAST), sinks=[OtelSink(exporter)]
    )
    trace_id, payload = chat_trace("refund?", "no")
    async with watching(watcher):
        await post(watcher, payload)
        await scored(watcher, 1)
    await anyio.to_thread.run_sync(exporter.close)
    await otel.close()
    (span,) = list(collector.unclaimed)
    root = json.loads(payload)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"]
    assert (span.trace_id, span.parent_id, span.name) == (trace_id, root, f"evaluation {evals[0].id}")
    assert span.attributes["niceeval.outcome"] == "failed"
    events = {e.attributes["gen_ai.evaluation.name"]: dict(e.attributes) for e in span.events}
    assert {e.name for e in span.events} == {"gen_ai.evaluation.result"}
    assert events["includes('refund')"]["gen_ai.evaluation.score.label"] == "failed"
    assert events["includes('refund')"]["gen_ai.evaluation.score.value"] == 0.0
    assert events["called_tool('search')"]["gen_ai.evaluation.score.label"] == "passed"
