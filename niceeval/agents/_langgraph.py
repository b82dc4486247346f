"""`langgraph_agent`: a compiled LangGraph graph over a `messages` state as the agent under test.

Events come from a LangChain callback handler passed in the run's config, which LangGraph hands to every node:
`on_llm_end` gives each chat model call's usage (`usage_metadata`) and model name, `on_tool_start` /
`on_tool_end` / `on_tool_error` each tool call (paired by run id, recorded under the model's tool call id).
LangSmith tracing is switched off around every run, whatever the environment says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from niceeval._core.errors import UsageError
from niceeval._core.events import MessageEvent
from niceeval.agents._kit import Histories, ToolCalls, final_reply, priced_model, require, usage_event
from niceeval.agents._protocol import AgentReply
from niceeval.tracing._session import SessionTrace, TraceOptions, end_trace, session_trace, traced_turn

if TYPE_CHECKING:
    from langchain_core.callbacks import AsyncCallbackHandler
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import LLMResult

    from niceeval._core.events import EventLog

_EXTRA = "langgraph"


def langgraph_agent(graph: Any, *, config: dict[str, Any] | None = None, traces: bool = False) -> LangGraphAdapter:
    """A compiled LangGraph graph as the agent under test, its model and tool calls recorded as they happen.

        from niceeval.agents import langgraph_agent
        from my_app.graph import graph  # builder.compile(), a state with a `messages` list

        config = define_config(agent=langgraph_agent(graph))

    Each turn is one `graph.ainvoke({"messages": [...]})`. A graph compiled with a checkpointer keeps the
    conversation itself (the session id is the `thread_id`, and only the new message is sent); otherwise the
    adapter keeps the state's messages per session. Either way `t.revive()` continues the conversation.
    The model inside the graph is yours (e.g. `ChatOpenAI(base_url=...)`), so point it where it should go.

    Args:
        graph: The compiled graph (`StateGraph.compile()`, or any runnable taking and returning
            `{"messages": [...]}`).
        config: A `RunnableConfig` merged into every run (e.g. `{"recursion_limit": 10}`); niceeval adds
            its callback handler and, with a checkpointer, the `thread_id`.
        traces: Also keep each run's OpenTelemetry spans (from an instrumentor you install, e.g. OpenInference's
            `LangChainInstrumentor().instrument()`) for `t.span(...)` and the viewer; events still come from the
            callbacks, so nothing counts twice.

    Raises:
        ImportError: LangGraph is not installed (`pip install 'niceeval[langgraph]'`).
    """
    require("langgraph", _EXTRA)
    require("langchain_core.callbacks", _EXTRA)
    return LangGraphAdapter(graph, dict(config or {}), traces=traces)


class LangGraphAdapter:
    """Opens sessions on a compiled graph; without a checkpointer, conversations are kept per session id."""

    def __init__(self, graph: Any, config: dict[str, Any], *, traces: bool = False) -> None:
        self.graph = graph
        self.config = config
        self.traces = traces
        self.histories: Histories[list[BaseMessage]] = Histories()

    async def open(self, session_id: str, log: EventLog) -> LangGraphSession:
        """Start (or continue) the conversation `session_id`."""
        session = LangGraphSession(self, session_id, log)
        session.trace = await session_trace(log, TraceOptions(events=False)) if self.traces else None
        return session


class LangGraphSession:
    """One conversation: each `send` is a `graph.ainvoke` with the new user message."""

    def __init__(self, adapter: LangGraphAdapter, session_id: str, log: EventLog) -> None:
        self.id = session_id
        self.log = log
        self._adapter = adapter
        self.trace: SessionTrace | None = None

    async def send(self, message: str, *, output: type[Any] | None = None, deps: Any = None) -> AgentReply:
        """Run the graph on `message` and return its last message's text, with `structured_response` as data.

        `output=` validates the graph's `structured_response` when it sets one, else the last message's text
        as JSON: the graph decides how it answers, so ask for structure inside it. `deps` (from
        `t.send(..., deps={...})`) is merged into this run's config (its `configurable` key by key).
        """
        from langchain_core.messages import HumanMessage
        from langsmith import tracing_context

        adapter = self._adapter
        self.log.emit(MessageEvent(role="user", text=message))
        calls = ToolCalls(self.log)
        base = adapter.config if deps is None else _merged(adapter.config, deps)
        config = {**base, "callbacks": [*base.get("callbacks", []), _recorder(self.log, calls)]}
        checkpointed = getattr(adapter.graph, "checkpointer", None) is not None
        if checkpointed:
            config["configurable"] = {**config.get("configurable", {}), "thread_id": self.id}
        history = [] if checkpointed else adapter.histories.get(self.id) or []
        try:
            with tracing_context(enabled=False):
                async with traced_turn(self.trace):
                    state = await adapter.graph.ainvoke({"messages": [*history, HumanMessage(message)]}, config)
        except BaseException as exc:
            calls.abandon(exc)
            raise
        messages = list(state.get("messages", []))
        if not checkpointed:
            adapter.histories.put(self.id, messages)
        text = messages[-1].text if messages else ""
        structured = state.get("structured_response")
        return final_reply(self.log, AgentReply(text=text, data=structured) if structured is not None else text, output)

    async def close(self) -> None:
        """End the trace, if any; the conversation stays in the checkpointer or the adapter, for revival."""
        trace, self.trace = self.trace, None
        await end_trace(trace)


def _recorder(log: EventLog, calls: ToolCalls) -> AsyncCallbackHandler:
    from langchain_core.callbacks import AsyncCallbackHandler
    from langchain_core.messages import AIMessage

    call_ids: dict[UUID, str] = {}

    class Recorder(AsyncCallbackHandler):
        async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
            for generations in response.generations:
                for generation in generations:
                    message = getattr(generation, "message", None)
                    if isinstance(message, AIMessage) and message.usage_metadata is not None:
                        usage = message.usage_metadata
                        details = usage.get("input_token_details") or {}
                        metadata = message.response_metadata
                        name = str(metadata.get("model_name") or metadata.get("model") or "unknown")
                        log.emit(
                            usage_event(
                                priced_model(name, str(metadata.get("model_provider") or "openai")),
                                prompt_tokens=usage["input_tokens"],
                                output_tokens=usage["output_tokens"],
                                cached_tokens=details.get("cache_read") or 0,
                            )
                        )

        async def on_tool_start(
            self, serialized: dict[str, Any], input_str: str, *, run_id: UUID, **kwargs: Any
        ) -> None:
            call_id = str(kwargs.get("tool_call_id") or run_id)
            call_ids[run_id] = call_id
            calls.started(call_id, str(serialized.get("name", "")), kwargs.get("inputs") or input_str)

        async def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
            content = getattr(output, "content", output)
            calls.ended(call_ids.pop(run_id, str(run_id)), content)

        async def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
            call_id = call_ids.pop(run_id, str(run_id))
            calls.failing(call_id, error)
            calls.ended(call_id)

    return Recorder()


def _merged(config: dict[str, Any], deps: Any) -> dict[str, Any]:
    """The adapter's config with a turn's `deps` (a RunnableConfig dict) over it, `configurable` merged by key."""
    if not isinstance(deps, dict):
        raise UsageError(
            f"langgraph_agent: t.send(..., deps=...) is merged into the graph's config, so it must be a dict "
            f"(e.g. {{'configurable': {{'user_id': 'u1'}}}}), got {type(deps).__name__}."
        )
    merged = {**config, **deps}
    if "configurable" in config and "configurable" in deps:
        merged["configurable"] = {**config["configurable"], **deps["configurable"]}
    return merged
