"""`openai_agents_agent`: an OpenAI Agents SDK agent (`agents.Agent`) as the agent under test.

Events come from the SDK's own run hooks as the run goes: `on_llm_end` gives each model call's usage,
`on_tool_start` / `on_tool_end` each function tool call (paired by `tool_call_id`), `on_handoff` each handoff;
the run config's `tool_error_formatter` sees the exception of a tool that raised, so a failed tool is recorded
as failed with its real error, not recognised by the message the model is sent. Tracing is off for every run.
A copy made by `replaying(tools)` runs a clone of the agent (and of the agents it hands off to) whose function
tools' `on_invoke_tool` answers from a recorded trace instead of running the tool.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from niceeval._core.events import ErrorEvent, EventLog, MessageEvent, SubagentCalledEvent
from niceeval.agents._kit import Histories, ToolCalls, final_reply, priced_model, require, usage_event
from niceeval.agents._protocol import AgentReply
from niceeval.agents._tool_replay import UnrecordedToolCall
from niceeval.providers import openai_client, release
from niceeval.tracing._session import SessionTrace, TraceOptions, end_trace, session_trace, traced_turn

if TYPE_CHECKING:
    from agents import Agent, RunConfig, RunContextWrapper, RunHooks
    from agents.items import ModelResponse, TResponseInputItem
    from agents.run_config import ToolErrorFormatterArgs
    from agents.tool import Tool
    from openai import AsyncOpenAI

    from niceeval.agents._tool_replay import RecordedTools

_EXTRA = "openai-agents"


def openai_agents_agent(
    agent: Agent[Any],
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    max_turns: int = 10,
    run_config: RunConfig | None = None,
    context: Any = None,
    timeout: float = 60.0,
    traces: bool = False,
) -> OpenAIAgentsAdapter:
    """An OpenAI Agents SDK agent as the agent under test, its tool calls and usage recorded as they happen.

        from agents import Agent, function_tool
        from niceeval.agents import openai_agents_agent

        config = define_config(agent=openai_agents_agent(Agent(name="support", tools=[lookup_order])))

    Each turn is one `Runner.run`; the conversation (`result.to_input_list()`) is kept per session, so
    `t.revive()` continues it. `t.send(..., output=Model)` runs a copy of the agent with `output_type=Model`.
    Model names are resolved by the run's OpenAI provider, over one niceeval-owned `AsyncOpenAI` client per
    session (shared across the suite's sessions by `niceeval run`), closed when the session ends.

    Args:
        agent: The `agents.Agent` to test (with its tools, handoffs, guardrails and output type).
        base_url: An OpenAI-compatible endpoint (e.g. the niceeval.testing server); `OPENAI_BASE_URL` or the
            SDK's default otherwise.
        api_key: The key; `OPENAI_API_KEY` otherwise (a placeholder when `base_url` is given without one).
        max_turns: Model calls allowed per turn; when spent, the turn fails with an `error` event.
        run_config: A `RunConfig` to start from; tracing is switched off in it whatever it says. A custom
            `model_provider` in it is kept (and owns its own clients).
        context: The run context object passed to every run (your tools' `RunContextWrapper.context`).
        timeout: Seconds to wait for each model response.
        traces: Keep the SDK's tracing on and each run's OpenTelemetry spans (with OpenInference's
            `OpenAIAgentsInstrumentor().instrument()`, which replaces the SDK's own exporter) for `t.span(...)`
            and the viewer; events still come from the run hooks, so nothing counts twice.

    Raises:
        ImportError: `openai-agents` is not installed (`pip install 'niceeval[openai-agents]'`).
    """
    require("agents", _EXTRA)
    from agents import RunConfig

    config = run_config if run_config is not None else RunConfig()
    return OpenAIAgentsAdapter(
        agent,
        _Connection(base_url=base_url, api_key=api_key, timeout=timeout),
        max_turns=max_turns,
        run_config=dataclasses.replace(config, tracing_disabled=not traces),
        context=context,
        traces=traces,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class _Connection:
    base_url: str | None
    api_key: str | None
    timeout: float

    def client(self) -> AsyncOpenAI:
        key = self.api_key or os.environ.get("OPENAI_API_KEY") or ("niceeval" if self.base_url else None)
        return openai_client(key=key, url=self.base_url, timeout=self.timeout)


class OpenAIAgentsAdapter:
    """Opens sessions on an Agents SDK agent; conversations are kept per session id."""

    def __init__(
        self,
        agent: Agent[Any],
        connection: _Connection,
        *,
        max_turns: int,
        run_config: RunConfig,
        context: Any,
        traces: bool = False,
    ) -> None:
        self.traces = traces
        self.agent = agent
        self.max_turns = max_turns
        self.context = context
        self.run_config = run_config
        self.histories: Histories[list[TResponseInputItem]] = Histories()
        self._connection = connection

    def replaying(self, tools: RecordedTools) -> OpenAIAgentsAdapter:
        """A copy of this adapter (its own conversations) whose runs answer every function tool call from `tools`."""
        return OpenAIAgentsAdapter(
            _replaying_agent(self.agent, tools, {}),
            self._connection,
            max_turns=self.max_turns,
            run_config=self.run_config,
            context=self.context,
            traces=self.traces,
        )

    async def open(self, session_id: str, log: EventLog) -> OpenAIAgentsSession:
        """Start (or continue) the conversation `session_id`."""
        session = await self._session(session_id, log)
        session._trace = await session_trace(log, TraceOptions(events=False)) if self.traces else None
        return session

    async def _session(self, session_id: str, log: EventLog) -> OpenAIAgentsSession:
        from agents import OpenAIProvider
        from agents.models.multi_provider import MultiProvider

        if not isinstance(self.run_config.model_provider, MultiProvider):
            return OpenAIAgentsSession(self, session_id, log, self.run_config, None)
        client = self._connection.client()
        # SDK retries on (the agent's own behaviour), over the same connection pool as the suite's other calls.
        provider = OpenAIProvider(openai_client=client.with_options(max_retries=2))
        config = dataclasses.replace(self.run_config, model_provider=provider)
        return OpenAIAgentsSession(self, session_id, log, config, client)


class OpenAIAgentsSession:
    """One conversation: each `send` is a `Runner.run` over the conversation so far."""

    def __init__(
        self,
        adapter: OpenAIAgentsAdapter,
        session_id: str,
        log: EventLog,
        run_config: RunConfig,
        client: AsyncOpenAI | None,
    ) -> None:
        self.id = session_id
        self.log = log
        self._adapter = adapter
        self._run_config = run_config
        self._client = client
        self._trace: SessionTrace | None = None
        """Set by `open` with `traces=True`."""

    async def send(self, message: str, *, output: type[Any] | None = None, deps: Any = None) -> AgentReply:
        """Run the agent on `message` (after the conversation so far) and return its final output; `deps` (from
        `t.send(..., deps=...)`) is the run's `context`, replacing the adapter's."""
        from agents import MaxTurnsExceeded, Runner

        adapter = self._adapter
        self.log.emit(MessageEvent(role="user", text=message))
        agent = adapter.agent if output is None else adapter.agent.clone(output_type=output)
        history = adapter.histories.get(self.id) or []
        calls = ToolCalls(self.log)
        config = dataclasses.replace(
            self._run_config, tool_error_formatter=_recording_formatter(calls, self._run_config)
        )
        try:
            async with traced_turn(self._trace):
                result = await Runner.run(
                    agent,
                    [*history, {"role": "user", "content": message}],
                    context=adapter.context if deps is None else deps,
                    max_turns=adapter.max_turns,
                    hooks=_hooks(self.log, calls, config),
                    run_config=config,
                )
        except MaxTurnsExceeded as exc:
            calls.abandon(exc)
            self.log.emit(ErrorEvent(message=f"{agent.name}: {exc}", error_type="MaxTurnsExceeded"))
            return AgentReply(text="", status="failed")
        except BaseException as exc:
            calls.abandon(exc)
            if isinstance(exc.__cause__, UnrecordedToolCall):  # the SDK wraps what a tool raises in its UserError
                raise exc.__cause__ from None
            raise
        adapter.histories.put(self.id, result.to_input_list())
        return final_reply(self.log, result.final_output, output)

    async def close(self) -> None:
        """Give the client back; the conversation stays with the adapter so the session can be revived."""
        trace, self._trace = self._trace, None
        await end_trace(trace)
        if self._client is not None:
            await release(self._client)
            self._client = None


def _recording_formatter(calls: ToolCalls, config: RunConfig) -> Any:
    """A `tool_error_formatter` that records the tool's exception, then defers to the user's formatter, if any."""
    user = config.tool_error_formatter

    def record(args: ToolErrorFormatterArgs[Any]) -> Any:
        if args.kind == "tool_exception" and args.error is not None:
            calls.failing(args.call_id, args.error)
        else:
            calls.failing(args.call_id, args.default_message)
        return user(args) if user is not None else None

    return record


def model_name(agent: Agent[Any], config: RunConfig) -> str:
    """The model a call of `agent` used, as `provider/name` for pricing (the SDK resolves it the same way)."""
    from agents.models.default_models import get_default_model

    chosen: Any = config.model if config.model is not None else agent.model
    if chosen is None:
        return priced_model(get_default_model())
    if isinstance(chosen, str):
        return priced_model(chosen)
    return priced_model(str(getattr(chosen, "model", type(chosen).__name__)))


def _hooks(log: EventLog, calls: ToolCalls, config: RunConfig) -> RunHooks[Any]:
    from agents import RunHooks
    from agents.tool_context import ToolContext

    class Recorder(RunHooks[Any]):
        async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse) -> None:
            usage = response.usage
            log.emit(
                usage_event(
                    model_name(agent, config),
                    prompt_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cached_tokens=usage.input_tokens_details.cached_tokens or 0,
                )
            )

        async def on_tool_start(self, context: RunContextWrapper[Any], agent: Any, tool: Tool) -> None:
            if isinstance(context, ToolContext):
                calls.started(context.tool_call_id, context.tool_name, context.tool_arguments)

        async def on_tool_end(self, context: RunContextWrapper[Any], agent: Any, tool: Tool, result: object) -> None:
            if isinstance(context, ToolContext):
                calls.ended(context.tool_call_id, result, name=context.tool_name, arguments=context.tool_arguments)

        async def on_handoff(self, context: RunContextWrapper[Any], from_agent: Any, to_agent: Any) -> None:
            log.emit(SubagentCalledEvent(name=str(getattr(to_agent, "name", to_agent)), input=None))

    return Recorder()


def _replaying_agent(agent: Agent[Any], tools: RecordedTools, done: dict[int, Agent[Any]]) -> Agent[Any]:
    """A clone of `agent` whose function tools answer from `tools`, and so the agents it hands off to (`done`: the
    clones made so far, so a cycle of handoffs ends)."""
    from agents import Agent, FunctionTool

    if id(agent) in done:
        return done[id(agent)]
    clone = agent.clone()
    done[id(agent)] = clone
    clone.tools = [
        dataclasses.replace(tool, on_invoke_tool=_recorded_answer(tools)) if isinstance(tool, FunctionTool) else tool
        for tool in agent.tools
    ]
    clone.handoffs = [
        _replaying_agent(target, tools, done) if isinstance(target, Agent) else target for target in agent.handoffs
    ]
    return clone


def _recorded_answer(tools: RecordedTools) -> Any:
    """An `on_invoke_tool` answering from the recorded trace; a recorded failure answers what the SDK tells the
    model of a tool that raised (`default_tool_error_function`)."""
    import json

    from agents import default_tool_error_function
    from agents.tool_context import ToolContext

    from niceeval.agents._tool_replay import RecordedToolFailure

    async def answer(context: ToolContext[Any], arguments: str) -> Any:
        try:
            return tools.answer(context.tool_name, json.loads(arguments) if arguments else {})
        except RecordedToolFailure as exc:
            return default_tool_error_function(context, exc)

    return answer
