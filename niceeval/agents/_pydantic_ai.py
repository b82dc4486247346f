"""`pydantic_ai_agent`: a pydantic-ai `Agent` as the agent under test.

Events come from a capability added to every run, pydantic-ai's own extension point: `after_model_request`
gives each model response (its usage and model name), `on_event` the tool call and result events as the run
streams them, and `on_tool_execute_error` the exception of a tool that raised. A copy made by `replaying(tools)`
answers the agent's tool calls from a recorded trace through the same extension point (`wrap_tool_execute`
returns the recorded output without running the tool).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from niceeval._core.errors import UsageError
from niceeval._core.events import MessageEvent
from niceeval.agents._kit import Histories, ToolCalls, final_reply, priced_model, require, usage_event
from niceeval.agents._protocol import AgentReply
from niceeval.providers import openai_client, release
from niceeval.tracing._session import SessionTrace, TraceOptions, end_trace, session_trace, traced_turn

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import Model

    from niceeval._core.events import EventLog
    from niceeval.agents._tool_replay import RecordedTools

_EXTRA = "pydantic-ai"
_OPENAI_KINDS = {"openai": "responses", "openai-responses": "responses", "openai-chat": "chat"}


def pydantic_ai_agent(
    agent: Agent[Any, Any],
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    deps: Any = None,
    timeout: float = 60.0,
    traces: bool = False,
    model: str | None = None,
) -> PydanticAIAdapter:
    """A pydantic-ai agent as the agent under test, its tool calls and usage recorded as they happen.

        from pydantic_ai import Agent
        from niceeval.agents import pydantic_ai_agent

        config = define_config(agent=pydantic_ai_agent(Agent("openai:gpt-5-mini", tools=[lookup_order])))

    Each turn is one `agent.run` with the conversation so far (`message_history`), kept per session so
    `t.revive()` continues it; `t.send(..., output=Model)` passes `output_type=Model` to that run.

    Args:
        agent: The `pydantic_ai.Agent` to test.
        base_url: An OpenAI-compatible endpoint for an `openai:` / `openai-chat:` / `openai-responses:` model
            (e.g. the niceeval.testing server); the run's model is then built over a niceeval-owned client
            (shared across the suite, closed with the session). Without it the agent's own model is used as is.
        api_key: The key for `base_url`; `OPENAI_API_KEY` otherwise (a placeholder when there is none).
        deps: The dependencies passed to every run (`RunContext.deps`).
        timeout: Seconds to wait for each model response (with `base_url`).
        traces: Also keep the run's OpenTelemetry spans (pydantic-ai's instrumentation is switched on for each
            run) for `t.span(...)` and the viewer; events still come from the hooks, so nothing counts twice.
        model: Run the agent with this model instead of its own (`'openai:gpt-5-mini'`), without copying the
            agent: a variant's model, `per_variant(lambda v: pydantic_ai_agent(agent, model=v["model"]))`.

    Raises:
        ImportError: pydantic-ai is not installed (`pip install 'niceeval[pydantic-ai]'`).
        UsageError: `base_url` is given but the agent's model is not an OpenAI one.
    """
    require("pydantic_ai", _EXTRA)
    # Imported now, while the config loads: the first run would otherwise block the suite's loop importing it.
    require("pydantic_ai.models.openai", _EXTRA)
    if base_url is not None:
        _openai_model(agent, model)
    adapter = PydanticAIAdapter(agent, base_url=base_url, api_key=api_key, deps=deps, timeout=timeout, traces=traces)
    adapter.model = model
    return adapter


class PydanticAIAdapter:
    """Opens sessions on a pydantic-ai agent; conversations are kept per session id."""

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        base_url: str | None,
        api_key: str | None,
        deps: Any,
        timeout: float,
        traces: bool = False,
        tools: RecordedTools | None = None,
    ) -> None:
        self.agent = agent
        self.deps = deps
        self.histories: Histories[list[ModelMessage]] = Histories()
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = timeout
        self.traces = traces
        """Keep each run's spans too (`pydantic_ai_agent(traces=True)`)."""
        self.model: str | None = None
        """The model runs use instead of the agent's own (`pydantic_ai_agent(model=...)`)."""
        self.tools = tools
        """The recorded tool calls that answer this adapter's tool calls (`replaying`); None: the tools run."""

    def replaying(self, tools: RecordedTools) -> PydanticAIAdapter:
        """A copy of this adapter (its own conversations) whose runs answer every tool call from `tools`."""
        copy = PydanticAIAdapter(
            self.agent,
            base_url=self._base_url,
            api_key=self._api_key,
            deps=self.deps,
            timeout=self._timeout,
            traces=self.traces,
            tools=tools,
        )
        copy.model = self.model
        return copy

    async def open(self, session_id: str, log: EventLog) -> PydanticAISession:
        """Start (or continue) the conversation `session_id`."""
        trace = await session_trace(log, TraceOptions(events=False)) if self.traces else None
        if self._base_url is None:
            return PydanticAISession(self, session_id, log, self.model, None, trace)
        key = self._api_key or os.environ.get("OPENAI_API_KEY") or "niceeval"
        client = openai_client(key=key, url=self._base_url, timeout=self._timeout)
        return PydanticAISession(self, session_id, log, _model_over(self.agent, client, self.model), client, trace)


def _openai_model(agent: Agent[Any, Any], override: str | None = None) -> tuple[str, str]:
    """`(kind, name)` of the agent's OpenAI model: kind `chat` or `responses`.

    Raises:
        UsageError: The agent's model is not an OpenAI one, so `base_url` cannot apply to it.
    """
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel

    model = agent.model if override is None else override
    if isinstance(model, OpenAIChatModel | OpenAIResponsesModel):
        return ("chat" if isinstance(model, OpenAIChatModel) else "responses"), model.model_name
    if isinstance(model, str) and model.split(":", 1)[0] in _OPENAI_KINDS:
        prefix, name = model.split(":", 1)
        return _OPENAI_KINDS[prefix], name
    raise UsageError(
        f"pydantic_ai_agent(base_url=...) needs the agent's model to be an OpenAI one ('openai:<name>', "
        f"'openai-chat:<name>' or an OpenAI model object), not {model!r}; drop base_url to use the agent's own "
        "model as it is"
    )


def _model_over(agent: Agent[Any, Any], client: AsyncOpenAI, override: str | None = None) -> Model:
    """The agent's OpenAI model, rebuilt over `client` (SDK retries on, as the model would have alone)."""
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    kind, name = _openai_model(agent, override)
    provider = OpenAIProvider(openai_client=client.with_options(max_retries=2))
    if kind == "chat":
        return OpenAIChatModel(name, provider=provider)
    return OpenAIResponsesModel(name, provider=provider)


class PydanticAISession:
    """One conversation: each `send` is an `agent.run` over the conversation so far."""

    def __init__(
        self,
        adapter: PydanticAIAdapter,
        session_id: str,
        log: EventLog,
        model: Model | str | None,
        client: AsyncOpenAI | None,
        trace: SessionTrace | None = None,
    ) -> None:
        self.id = session_id
        self.log = log
        self._adapter = adapter
        self._model = model
        self._client = client
        self._trace = trace

    async def send(self, message: str, *, output: type[Any] | None = None, deps: Any = None) -> AgentReply:
        """Run the agent on `message` (after the conversation so far) and return its output; `deps` (from
        `t.send(..., deps=...)`) replaces the adapter's for this run."""
        adapter = self._adapter
        self.log.emit(MessageEvent(role="user", text=message))
        calls = ToolCalls(self.log)
        extra: dict[str, Any] = {"output_type": output} if output is not None else {}
        capabilities = [_recorder(self.log, calls), *([_instrumentation()] if self._trace is not None else [])]
        if adapter.tools is not None:
            capabilities.append(_replayer(adapter.tools))
        try:
            async with traced_turn(self._trace):
                result = await adapter.agent.run(
                    message,
                    message_history=adapter.histories.get(self.id),
                    model=self._model,
                    deps=adapter.deps if deps is None else deps,
                    capabilities=capabilities,
                    **extra,
                )
        except BaseException as exc:
            calls.abandon(exc)
            raise
        adapter.histories.put(self.id, result.all_messages())
        return final_reply(self.log, result.output, output)

    async def close(self) -> None:
        """Give the client back; the conversation stays with the adapter so the session can be revived."""
        trace, self._trace = self._trace, None
        await end_trace(trace)
        if self._client is not None:
            await release(self._client)
            self._client = None


def _instrumentation() -> Any:
    from pydantic_ai.capabilities.instrumentation import Instrumentation

    return Instrumentation()


def _recorder(log: EventLog, calls: ToolCalls) -> Any:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import AgentStreamEvent, FunctionToolCallEvent, FunctionToolResultEvent, ModelResponse

    class Recorder(AbstractCapability[Any]):
        async def after_model_request(
            self, ctx: RunContext[Any], *, request_context: Any, response: ModelResponse
        ) -> ModelResponse:
            usage = response.usage
            model = priced_model(response.model_name or "unknown", response.provider_name or "openai")
            log.emit(
                usage_event(
                    model,
                    prompt_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    cached_tokens=usage.cache_read_tokens,
                )
            )
            return response

        async def on_event(self, ctx: RunContext[Any], *, event: AgentStreamEvent) -> None:
            if isinstance(event, FunctionToolCallEvent):
                calls.started(event.part.tool_call_id, event.part.tool_name, event.part.args)
            elif isinstance(event, FunctionToolResultEvent):
                part = event.part
                if part.outcome != "success":
                    calls.failing(part.tool_call_id, f"{part.outcome}: {part.model_response_str(wrap_if_error=False)}")
                calls.ended(part.tool_call_id, part.content, name=part.tool_name)

        async def on_tool_execute_error(
            self, ctx: RunContext[Any], *, call: Any, tool_def: Any, args: Any, error: Exception
        ) -> Any:
            calls.failing(call.tool_call_id, error)
            raise error

    return Recorder()


def _replayer(tools: RecordedTools) -> Any:
    """A capability answering each tool call from `tools` instead of running the tool. A call the trace recorded
    as failed raises `ModelRetry` with the recorded error, pydantic-ai's way to tell the model a call failed."""
    from pydantic_ai import ModelRetry, RunContext
    from pydantic_ai.capabilities import AbstractCapability

    from niceeval.agents._tool_replay import RecordedToolFailure

    class Replayer(AbstractCapability[Any]):
        async def wrap_tool_execute(
            self, ctx: RunContext[Any], *, call: Any, tool_def: Any, args: Any, handler: Any
        ) -> Any:
            try:
                return tools.answer(call.tool_name, call.args_as_dict())
            except RecordedToolFailure as exc:
                raise ModelRetry(str(exc)) from exc

    return Replayer()
