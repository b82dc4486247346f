"""The store keeps each run's spans (migration 0005), scrubbed of secrets like the rest, and gives them back."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from sqlalchemy import text

from niceeval import EvalContext, define_eval
from niceeval._core.results import RunResult
from niceeval._core.spans import SpanRecord, link
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.store import Store, SuiteRunStart
from tests.store.test_store import planned, recording
from tests.tracing.test_span_assertions import AGENT

KEY = "sk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oA"


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def traced_run() -> RunResult:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("where is 1234")

    entry = EvalEntry(id="e", spec=ev)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=10, agent=AGENT, pricing={}))


def test_a_traced_run_records_its_spans_and_the_store_gives_them_back(store: Store) -> None:
    result = traced_run()
    assert [s.name for s in result.spans] == [
        "time_range_agent run",
        "chat gpt-5-mini",
        "running tool: lookup_order",
    ]
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="s"), planned("e"))
        recorder.add("s", [result])
    back = store.eval_run("s", "e")
    assert back.spans == result.spans
    top, *children = link(record.span() for record in back.spans)
    assert top.children == children and all(child.parent is top for child in children)


def test_span_attributes_are_scrubbed(store: Store) -> None:
    span = SpanRecord(
        trace_id="a" * 32,
        span_id="b" * 16,
        name="http call",
        attributes={"http.request.header.authorization": "Bearer abc.def", "note": f"key={KEY}"},
    )
    run = RunResult(eval_id="e", file="evals/a.py", line=1, outcome="passed", duration_s=0.1, spans=[span])
    with recording(store) as recorder:
        recorder.begin(SuiteRunStart(id="s"), planned("e"))
        recorder.add("s", [run])
    with store.engine.connect() as conn:
        stored = str(list(conn.execute(text("select payload from spans"))))
    assert KEY not in stored and "abc.def" not in stored
    (back,) = store.eval_run("s", "e").spans
    assert back.attributes == {"http.request.header.authorization": "[redacted]", "note": "key=[redacted]"}
    assert back.name == "http call" and back.trace_id == "a" * 32
