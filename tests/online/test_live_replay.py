"""The issue's proof for a bad trace turned into a case that replays the live agent: the pydantic-ai example's agent
(its order desk tools, its model answered by the offline server) exports a production trace to `niceeval watch`;
an online eval fails on it; `cases from-trace` writes the case; `niceeval run` on it runs the agent again (the
offline server gets requests) with its tool answered from the trace (the tool function is not called), and fails
with the same assertion; the agent fixed, the same case passes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from niceeval._eval.config import load_config
from niceeval._run.discovery import discover
from niceeval._run.execute import ExecOptions
from niceeval.cli._main import build_parser
from niceeval.online._watch import Watcher, WatchOptions
from niceeval.store import Store
from niceeval.testing import LLMRequest, LLMServer, ReplyLike, ToolCall
from tests.online.test_watch import FAST, recorder_for, scored, watching

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pydantic_ai_agent"
QUOTE = "Quote the tool's answer."

ONLINE = """from niceeval import define_eval
from niceeval.expect import includes


@define_eval(online=True)
async def order_status(t):
    \"\"\"An order question is answered with the order's status, looked up in the order system.\"\"\"
    t.called_tool("lookup_order", input={"order_id": "1234"})
    t.check(t.reply, includes("shipped"))
"""

CALLS = """CALLS: list[str] = []
\"\"\"Every order id the real lookup_order tool was called with.\"\"\"
"""

CONFIG = """import os

import _shop
import tool_calls
from pydantic_ai import Agent

from niceeval import define_config
from niceeval.agents import pydantic_ai_agent

INSTRUCTIONS = "You answer questions about orders. Use the tools; never guess an order's status."


def lookup_order(order_id: str) -> str:
    \"\"\"Look up where an order is.

    Args:
        order_id: The order number, e.g. "1234".
    \"\"\"
    tool_calls.CALLS.append(order_id)
    return _shop.lookup_order(order_id)


support = Agent("openai:gpt-5-mini", instructions=INSTRUCTIONS, tools=[lookup_order], defer_model_check=True)
config = define_config(agent=pydantic_ai_agent(support, base_url=os.environ["SHOP_MODEL_URL"]), timeout=30)
"""


def scripted_model(request: LLMRequest) -> ReplyLike:
    """The example's offline model, which follows its instructions: it quotes the tool's answer only when told to."""
    last = request.messages[-1]
    if last.role == "tool":
        told = any(QUOTE in m.content for m in request.messages if m.role in ("system", "developer"))
        return f"Here you go: {last.content}." if told else "Here you go: it is on its way."
    return ToolCall(name="lookup_order", arguments={"order_id": "1234"})


def project(root: Path, *, fixed: bool) -> None:
    """The example's order desk as a project: its app functions, the agent in the config, the online eval."""
    shutil.copy(EXAMPLE / "_shop.py", root / "_shop.py")
    (root / "tool_calls.py").write_text(CALLS)
    instructions = f'INSTRUCTIONS = "You answer questions about orders. Use the tools; {QUOTE}"'
    config = CONFIG.replace(CONFIG.splitlines()[9], instructions) if fixed else CONFIG
    (root / "niceeval.config.py").write_text(config)
    (root / "evals").mkdir(exist_ok=True)
    (root / "evals" / "online.py").write_text(ONLINE)


async def production_trace(root: Path, base_url: str) -> tuple[str, list[tuple[str, str]]]:
    """The project's agent, run as production runs it (instrumented, exporting to `niceeval watch`): the trace id
    and the online eval's verdicts on it."""
    from openai import AsyncOpenAI
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    evals = discover(root, ["evals"]).online
    recorder, record = recorder_for(root, evals)
    kept: list[Any] = []
    watcher = Watcher(evals, ExecOptions(timeout=10, root=root), WatchOptions(port=0, limits=FAST), record=record)
    watcher.sinks.append(type("Keep", (), {"took": lambda self, result, trace: kept.append((result, trace))})())
    agent = load_config(root).agent.agent
    async with watching(watcher):
        provider = TracerProvider(resource=Resource.create({"service.name": "order-desk"}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{watcher.url}/v1/traces")))
        agent.instrument = InstrumentationSettings(tracer_provider=provider)
        async with AsyncOpenAI(base_url=base_url, api_key="k") as client:
            model = OpenAIResponsesModel("gpt-5-mini", provider=OpenAIProvider(openai_client=client))
            reply = await agent.run("Where is order 1234?", model=model)
        assert reply.output == "Here you go: it is on its way."
        await anyio.to_thread.run_sync(provider.shutdown)
        await scored(watcher, 1)
    recorder.close()
    ((online, trace),) = kept
    return trace.trace_id, [(a.name, a.state) for a in online.assertions]


def command(*argv: str) -> int:
    """A command's handler, in this process (`main` would end it)."""
    args = build_parser(list(argv)).parse_args(list(argv))
    code: int = args.handler(args)
    return code


def regression_verdicts(root: Path) -> tuple[str, list[tuple[str, str]], str | None]:
    """The latest stored run of the regression: its outcome, verdicts and error."""
    with Store.open(str(root / "results.db"), root=root) as store:
        (summary,) = [r for r in store.run("latest").evals if r.eval_id.startswith("evals/regressions.py::")]
        (result,) = store.results("latest", eval_ids=[summary.eval_id])
    return result.outcome, [(a.name, a.state) for a in result.assertions], result.error and result.error.message


@pytest.fixture
def shop_model(monkeypatch: pytest.MonkeyPatch) -> Any:
    server = LLMServer(scripted_model).start()
    monkeypatch.setenv("SHOP_MODEL_URL", server.base_url)
    yield server
    server.stop()


def test_a_bad_trace_becomes_a_case_that_replays_the_live_agent_fails_the_same_way_and_passes_once_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], shop_model: LLMServer
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    project(tmp_path, fixed=False)
    trace_id, live = anyio.run(production_trace, tmp_path, shop_model.base_url)
    assert live == [("includes('shipped')", "failed"), ("called_tool('lookup_order')", "passed")]
    import tool_calls

    assert tool_calls.CALLS == ["1234"]  # production ran the real tool
    store = ["--store", str(tmp_path / "results.db")]
    assert command("cases", "from-trace", trace_id, *store) == 0
    said = capsys.readouterr().out
    assert "1 recorded tool call(s) answering its tools" in said
    module = (tmp_path / "evals" / "regressions.py").read_text()
    name = f"trace_{trace_id[:12]}"
    assert f'@define_eval(name="{name}", trace="regressions/{trace_id}.json", replay="live")' in module
    saved = json.loads((tmp_path / "evals" / "regressions" / f"{trace_id}.json").read_text())
    assert saved["trace_id"] == trace_id

    before = len(shop_model.requests)
    assert command("run", "evals/regressions.py", *store) == 1
    assert len(shop_model.requests) - before == 2  # the live agent ran: the tool call, then the answer
    assert tool_calls.CALLS == ["1234"]  # ... with its tool answered from the trace, never run again
    assert regression_verdicts(tmp_path) == ("failed", live, None)
    answered = shop_model.requests[-1].messages[-1]
    assert (answered.role, answered.content) == ("tool", "order 1234 is shipped")  # the recorded output

    project(tmp_path, fixed=True)  # the fix: the agent is told to quote the tool's answer
    assert command("run", "evals/regressions.py", *store) == 0
    assert regression_verdicts(tmp_path) == (
        "passed",
        [("includes('shipped')", "passed"), ("called_tool('lookup_order')", "passed")],
        None,
    )
    assert tool_calls.CALLS == ["1234"]
