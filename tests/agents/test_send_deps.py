"""`t.send(..., deps=...)`: per-turn dependencies reach pydantic-ai (`deps`), the OpenAI Agents SDK (`context`) and
LangGraph (merged into the config); an agent that takes none says which do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from agents import Agent as SdkAgent
from agents import RunContextWrapper, function_tool
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import RunContext

from niceeval import EvalContext, RunResult, define_eval
from niceeval._core.errors import UsageError
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import openai_agents_agent, pydantic_ai_agent
from niceeval.agents._langgraph import _merged
from niceeval.testing import LLMServer, ToolCall


@dataclass
class Shop:
    owner: str


def run(spec: EvalSpec, agent: Any) -> RunResult:
    entry = EvalEntry(id=f"tests/agents/test_send_deps.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=30, agent=agent))


def two_turns_with_deps() -> EvalSpec:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("whose shop?", deps=Shop(owner="Ada"))
        await t.send("and now?", deps=Shop(owner="Bo"))
        await t.send("and by default?")

    return ev


def test_pydantic_ai_gets_each_turns_deps(llm_server: LLMServer) -> None:
    seen: list[str] = []
    agent: PydanticAgent[Shop, str] = PydanticAgent("openai:gpt-5-mini", deps_type=Shop, defer_model_check=True)

    @agent.tool
    def owner(ctx: RunContext[Shop]) -> str:
        """Who owns the shop."""
        seen.append(ctx.deps.owner)
        return ctx.deps.owner

    for _ in range(3):
        llm_server.push(ToolCall(name="owner", arguments={}), "done")
    adapter = pydantic_ai_agent(agent, base_url=llm_server.base_url, deps=Shop(owner="default"))
    result = run(two_turns_with_deps(), adapter)
    assert result.error is None, result.error
    assert seen == ["Ada", "Bo", "default"]


def test_the_agents_sdk_gets_each_turns_context(llm_server: LLMServer) -> None:
    seen: list[str] = []

    @function_tool
    def owner(wrapper: RunContextWrapper[Shop]) -> str:
        """Who owns the shop."""
        seen.append(wrapper.context.owner)
        return wrapper.context.owner

    for _ in range(3):
        llm_server.push(ToolCall(name="owner", arguments={}), "done")
    agent = SdkAgent(name="shop", instructions="Help.", model="gpt-5-mini", tools=[owner])
    adapter = openai_agents_agent(agent, base_url=llm_server.base_url, context=Shop(owner="default"))
    result = run(two_turns_with_deps(), adapter)
    assert result.error is None, result.error
    assert seen == ["Ada", "Bo", "default"]


def test_langgraph_deps_merge_into_the_config_key_by_key() -> None:
    base = {"configurable": {"user_id": "u0", "tier": "free"}, "tags": ["a"]}
    assert _merged(base, {"configurable": {"user_id": "u1"}, "tags": ["b"]}) == {
        "configurable": {"user_id": "u1", "tier": "free"},
        "tags": ["b"],
    }
    with pytest.raises(UsageError, match="must be a dict"):
        _merged(base, Shop(owner="x"))


def test_an_agent_that_takes_no_deps_says_which_do() -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        await t.send("hi", deps={"x": 1})

    result = run(ev, lambda m: "hi")
    assert result.error is not None and result.error.kind == "usage"
    assert "takes no dependencies; pydantic_ai_agent (deps), openai_agents_agent (context)" in result.error.message
