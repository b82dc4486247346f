"""The issue's proof on a real framework: a pydantic-ai agent (offline model, as in examples/pydantic_ai_agent)
exports its spans over OTLP to `niceeval watch`; the online eval reads its input, reply and tool call; the failing
trace becomes a regression that fails the same way in `niceeval run`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from niceeval._run.discovery import discover
from niceeval._run.execute import ExecOptions, execute
from niceeval.cli._main import build_parser
from niceeval.online._watch import Watcher, WatchOptions
from tests.online.test_watch import FAST, recorder_for, scored, watching

ONLINE = """from niceeval import define_eval
from niceeval.expect import includes


@define_eval(online=True)
async def delivered(t):
    t.check(t.input, includes("1234"))
    t.called_tool("lookup_order", input={"order_id": "1234"})
    t.check(t.reply, includes("delivered"))
"""


def support_agent(endpoint: str) -> Any:
    """A pydantic-ai agent with one tool, its model scripted, instrumented to export to `endpoint`."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": "1234"})])
        return ModelResponse(parts=[TextPart("Order 1234 has shipped.")])

    def lookup_order(order_id: str) -> str:
        """Look up an order by its number."""
        return f"order {order_id}: shipped"

    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    agent = Agent(FunctionModel(model), tools=[lookup_order])
    agent.instrument = InstrumentationSettings(tracer_provider=provider)
    return agent, provider


@pytest.mark.anyio
async def test_a_pydantic_ai_trace_is_scored_online_and_its_regression_fails_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "online.py").write_text(ONLINE)
    evals = discover(tmp_path, ["evals"]).online
    recorder, record = recorder_for(tmp_path, evals)
    kept: list[Any] = []
    watcher = Watcher(evals, ExecOptions(timeout=10, root=tmp_path), WatchOptions(port=0, limits=FAST), record=record)
    watcher.sinks.append(type("Keep", (), {"took": lambda self, result, trace: kept.append((result, trace))})())
    async with watching(watcher):
        agent, provider = support_agent(f"{watcher.url}/v1/traces")
        assert (await agent.run("Where is order 1234?")).output == "Order 1234 has shipped."
        await anyio.to_thread.run_sync(provider.shutdown)
        await scored(watcher, 1)
    recorder.close()
    ((online, trace),) = kept
    assert (trace.input, trace.reply, trace.service) == (
        "Where is order 1234?",
        "Order 1234 has shipped.",
        "support-bot",
    )
    live = [(a.name, a.state) for a in online.assertions]
    assert live == [
        ("includes('1234')", "passed"),
        ("includes('delivered')", "failed"),
        ("called_tool('lookup_order')", "passed"),
    ]
    argv = ["cases", "from-trace", trace.trace_id, "--store", str(tmp_path / "results.db")]
    args = build_parser(argv).parse_args(argv)  # its handler, not `main`: `main` ends a process whose non-daemon
    assert args.handler(args) == 0  # threads outlive the command, and this test's event loop keeps AnyIO's workers
    (regression,) = discover(tmp_path, ["evals/regressions.py"]).evals
    offline = await execute(regression, 0, ExecOptions(timeout=10, root=tmp_path))
    assert offline.outcome == online.outcome == "failed"
    assert [(a.name, a.state) for a in offline.assertions] == live
