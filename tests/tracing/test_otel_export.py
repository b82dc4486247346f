"""`niceeval run --otel-endpoint URL`: the suite as one trace (suite -> eval run -> turn -> judge call)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from niceeval.report.otel import otel_endpoint
from niceeval.testing import LLMRequest, LLMServer, Reply
from niceeval.tracing._collector import TraceCollector
from niceeval.tracing._receiver import TraceReceiver

CONFIG = """\
from niceeval import define_config
from niceeval.agents import FunctionSession


def agent(message: str, session: FunctionSession) -> str:
    session.usage("openai/gpt-5-mini", input_tokens=30, output_tokens=5)
    return "Your refund is on its way."


config = define_config(agent=agent, judge={"model": "openai/judge"})
"""
EVALS = """\
from niceeval import EvalContext, define_eval
from niceeval.expect import includes


@define_eval
async def refund(t: EvalContext) -> None:
    await t.send("I want a refund")
    await t.send("When?")
    t.check(t.reply, includes("refund"))
    t.judge.rubric("Is the reply polite?")


@define_eval
async def broken(t: EvalContext) -> None:
    await t.send("hi")
    t.check(t.reply, includes("nope"))
"""


def verdict(request: LLMRequest) -> Reply:
    return Reply(data={"reason": "polite", "pass": True, "score": 0.9})


@pytest.fixture
def receiver() -> Iterator[TraceReceiver]:
    server = TraceReceiver(TraceCollector()).start()
    try:
        yield server
    finally:
        anyio.run(server.close)


def test_the_suite_is_exported_as_one_trace(tmp_path: Path, receiver: TraceReceiver) -> None:
    (tmp_path / "niceeval.config.py").write_text(CONFIG)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "shop.py").write_text(EVALS)
    with LLMServer(verdict) as llm:
        env = {**os.environ, "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": llm.base_url}
        done = subprocess.run(
            [sys.executable, "-m", "niceeval.cli", "run", "--no-store", "--otel-endpoint", receiver.endpoint],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1, done.stdout + done.stderr  # `broken` fails, on purpose
    spans = list(receiver.collector.unclaimed)
    assert len({s.trace_id for s in spans}) == 1 and {s.service for s in spans} == {"niceeval"}
    by_name = {s.name: s for s in spans}
    suite = by_name["niceeval suite"]
    refund, broken = by_name["eval evals/shop.py::refund"], by_name["eval evals/shop.py::broken"]
    assert suite.parent_id is None and suite.attributes["niceeval.evals"] == 2
    assert refund.parent_id == suite.span_id and broken.parent_id == suite.span_id
    assert refund.attributes["niceeval.outcome"] == "passed" and refund.status == "unset"
    assert broken.status == "error" and broken.attributes["niceeval.outcome"] == "failed"
    assert (refund.attributes["gen_ai.usage.input_tokens"], refund.attributes["gen_ai.usage.output_tokens"]) == (60, 10)
    turns = sorted((s for s in spans if s.parent_id == refund.span_id and s.name.startswith("invoke_agent")),
                   key=lambda s: s.start_ns)  # fmt: skip
    assert [t.attributes["niceeval.turn"] for t in turns] == [1, 2]
    assert all(t.attributes["gen_ai.operation.name"] == "invoke_agent" for t in turns)
    assert refund.start_ns <= turns[0].start_ns <= turns[1].end_ns <= refund.end_ns
    (judge,) = [s for s in spans if s.parent_id == refund.span_id and s.name == "chat judge"]
    assert judge.attributes["gen_ai.operation.name"] == "chat" and judge.attributes["gen_ai.request.model"] == "judge"
    assert judge.attributes["gen_ai.provider.name"] == "openai" and judge.attributes["niceeval.judge.score"] == 0.9
    results = {e.attributes["gen_ai.evaluation.name"]: dict(e.attributes) for e in refund.events}
    assert {e.name for e in refund.events} == {"gen_ai.evaluation.result"}
    assert results["includes('refund')"] == {
        "gen_ai.evaluation.name": "includes('refund')",
        "gen_ai.evaluation.score.label": "passed",
        "gen_ai.evaluation.score.value": 1.0,
    }
    (rubric,) = [attributes for name, attributes in results.items() if name.startswith("rubric")]
    assert (rubric["gen_ai.evaluation.score.value"], rubric["gen_ai.evaluation.score.label"]) == (0.9, "passed")
    assert rubric["gen_ai.evaluation.explanation"].endswith("polite")


def test_the_endpoint_comes_from_the_flag_or_the_standard_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert otel_endpoint(None) is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")
    assert otel_endpoint(None) == "http://collector:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://tempo:4318/v1/traces")
    assert otel_endpoint(None) == "http://tempo:4318/v1/traces"
    assert otel_endpoint("http://127.0.0.1:4318/v1/traces") == "http://127.0.0.1:4318/v1/traces"
